#include "backends/cpu/attention.h"

#include <cmath>
#include <vector>

#include "backends/cpu/ops.h"

namespace fsvd::cpu {

void attention(const float* q, int64_t ldq, const KvView& kv, int n, int pos0, const HeadShape& shape,
               float* out, bool causal) {
  const int hd = shape.head_dim;
  const int group = shape.n_heads / shape.n_kv_heads;
  const int64_t out_stride = int64_t{shape.n_heads} * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
#pragma omp parallel
  {
    std::vector<float> scores(pos0 + n);  // per thread, reused across (row, head)
#pragma omp for collapse(2) schedule(static)
    for (int i = 0; i < n; ++i) {
      for (int h = 0; h < shape.n_heads; ++h) {
        const float* qh = q + i * ldq + int64_t{h} * hd;
        const int64_t kv_off = int64_t{h / group} * hd;
        const int len = causal ? pos0 + i + 1 : pos0 + n;
        for (int t = 0; t < len; ++t) {
          const float* kt = kv.k + kv.row(t) * kv.ld + kv_off;
          float dot = 0;
          for (int d = 0; d < hd; ++d) dot += qh[d] * kt[d];
          scores[t] = dot * scale;
        }
        softmax(scores.data(), len);
        float* oh = out + i * out_stride + int64_t{h} * hd;
        for (int d = 0; d < hd; ++d) oh[d] = 0;
        for (int t = 0; t < len; ++t) {
          const float* vt = kv.v + kv.row(t) * kv.ld + kv_off;
          const float p = scores[t];
          for (int d = 0; d < hd; ++d) oh[d] += p * vt[d];
        }
      }
    }
  }
}

}  // namespace fsvd::cpu
