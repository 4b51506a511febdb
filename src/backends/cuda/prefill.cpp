#include "backends/cuda/prefill.h"

#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/decode_attention.h"
#include "backends/cuda/elementwise.h"
#include "backends/cuda/embedding.h"
#include "backends/cuda/flash_attention.h"
#include "backends/cuda/kv_store.h"
#include "backends/cuda/norm.h"
#include "core/error.h"

namespace fsvd::cuda {
namespace {

constexpr const char* kWhere = "Prefill";

// Row strides of intermediates are rounded up to 8 (round_up8) and every
// product runs on padded_k weights (device_matrix.h): cuBLAS then takes its
// 16-byte-aligned kernels for any rank (the 2-element-aligned ones are much
// slower on odd ranks: bench/kernels/prefill_attention_notes.md).

// Grows `b` to at least n elements (contents are not kept).
template <typename T>
void grow(DeviceBuffer<T>& b, int64_t n) {
  if (b.size() < static_cast<size_t>(n)) b = DeviceBuffer<T>(static_cast<size_t>(n));
}

// w with its rows rounded up to 8 (DeviceModel allocates the zero rows): a
// product whose extra outputs are zero, so the next product's padded_k input
// comes out padded, and cuBLAS gets an output width it vectorizes.
DeviceMatrix padded_rows(DeviceMatrix w) {
  w.rows = round_up8(w.rows);
  return w;
}

}  // namespace

Prefill::Prefill(const DeviceModel& weights, const float* inv_freq, cudaStream_t stream)
    : weights_(weights), inv_freq_(inv_freq), stream_(stream), gemm_(stream),
      norm_sums_(norm_sums_floats(weights.config().hidden)) {
  check(weights.type() == ElementType::BF16, kWhere, "the prefill path needs bf16 weights");
  int64_t packed = 1, rank = 1;
  auto rank_of = [](const DeviceLinear& l) { return l.low_rank() ? l.first.rows : 1; };
  rank = rank_of(weights.lm_head());
  for (const DeviceLayer& l : weights.layers()) {
    packed = std::max({packed, l.qkv.first.rows, l.gate_up.first.rows});
    rank = std::max({rank, rank_of(l.o), rank_of(l.down)});
  }
  packed_ld_ = round_up8(packed);
  rank_ld_ = round_up8(rank);
}

void Prefill::reserve(int64_t n) {
  if (n <= rows_) return;
  ++version_;
  const ModelConfig& c = weights_.config();
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim, kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  grow(tokens_, n);
  grow(x_, n * c.hidden);
  grow(packed_, n * packed_ld_);
  grow(qkv_, n * (q_dim + 2 * kv_dim));
  grow(gate_, n * c.intermediate);
  grow(up_, n * c.intermediate);
  grow(hb_, n * c.hidden);
  grow(staged_b_, n * packed_ld_);
  grow(q_b_, n * q_dim);
  grow(att_b_, n * q_dim);
  grow(rank_b_, n * rank_ld_);
  grow(act_b_, n * c.intermediate);
  grow(gate_up_b_, n * 2 * c.intermediate);
  rows_ = n;
}

void Prefill::norm_rows(const float* x, const float* gain, int64_t n) {
  const ModelConfig& c = weights_.config();
  rmsnorm(x, gain, n, c.hidden, c.rms_eps, hb_.data(), ElementType::BF16, stream_);
}

Fold Prefill::norm_input(const float* x, const float* gain, int64_t n) {
  const ModelConfig& c = weights_.config();
  if (hb_gained_) {
    hb_gained_ = false;
    return {norm_sums_.data(), c.rms_eps};
  }
  norm_rows(x, gain, n);
  return {};
}

Fold Prefill::gained_output(bool fold, const float* next_gain) {
  hb_gained_ = fold;
  if (!fold) return {};
  return {nullptr, 0, hb_.data(), weights_.config().hidden, next_gain, norm_sums_.data()};
}

bool Prefill::fold_norms(int64_t rows, const DeviceLayer& l) const {
  // The products around each norm all take skinny_gemm (8-aligned rows), and
  // nothing is added to the residual after the product that writes hb_.
  const int64_t hidden = weights_.config().hidden;
  return rows <= kSkinnyAnyRows && hidden % 8 == 0 && hidden <= kMaxNormWidth && !l.o.bias && !l.down.bias;
}

void Prefill::linear(const DeviceLinear& l, const __nv_bfloat16* x, int64_t ldx, int64_t n, float* y,
                     bool accumulate, const Fold& in, const Fold& out_fold) {
  const int64_t out = l.out();
  if (l.low_rank()) {
    gemm_.run(padded_rows(l.first), x, ldx, n, rank_b_.data(), rank_ld_, ElementType::BF16, false, nullptr,
              Epilogue::bias, in);
    gemm_.run(padded_k(l.second), rank_b_.data(), rank_ld_, n, y, out, ElementType::F32, accumulate, nullptr,
              Epilogue::bias, out_fold);
  } else {
    Fold both = in;
    both.gained = out_fold.gained, both.gained_ld = out_fold.gained_ld, both.gain = out_fold.gain;
    both.sums_out = out_fold.sums_out;
    gemm_.run(l.first, x, ldx, n, y, out, ElementType::F32, accumulate, nullptr, Epilogue::bias, both);
  }
  if (l.bias) add_bias(y, out, l.bias, n, out, stream_);
}

void Prefill::layer(int index, int pos, int64_t n, int64_t row0, const KvCacheLayer& cache, const PagedRows& rows,
                    const int32_t* blocks, LowRankKv* lowrank, const DecodeAttention* decode) {
  const ModelConfig& c = weights_.config();
  const DeviceLayer& l = weights_.layers()[index];
  const int64_t ld = packed_ld_;
  // The packed first factors' product, each low-rank part's columns as bf16
  // in staged_b_ at the part's offset (a multiple of 8, zero padding after
  // it: DeviceModel spaces the parts), where its second factor reads them.
  // With no dense part the GEMM writes them so; otherwise it writes fp32 into
  // packed_ (the dense parts' outputs) and the low-rank columns are rounded
  // into place. (The direct bf16 output saves an fp32 round trip and a
  // launch: bench/kernels/prefill_attention_notes.md.)
  auto packed_first = [&](const DevicePacked& p, int64_t rows, const Fold& fold) {
    const bool all_low_rank = std::all_of(p.parts.begin(), p.parts.end(),
                                          [](const DevicePacked::Part& part) { return part.second.data != nullptr; });
    if (all_low_rank) {
      gemm_.run(padded_rows(p.first), hb_.data(), c.hidden, rows, staged_b_.data(), ld, ElementType::BF16, false,
                nullptr, Epilogue::bias, fold);
      return;
    }
    gemm_.run(p.first, hb_.data(), c.hidden, rows, packed_.data(), ld, ElementType::F32, false, nullptr,
              Epilogue::bias, fold);
    StageSegment segments[kMaxStageSegments];
    int count = 0;
    for (const DevicePacked::Part& part : p.parts)
      if (part.second.data) segments[count++] = {part.offset, part.rows, part.offset};
    if (count > 0) stage_bf16(packed_.data(), ld, rows, segments, count, staged_b_.data(), ld, stream_);
  };
  // One part's output rows: its second factor applied to its staged columns,
  // or its slice of the packed output when dense; plus the bias.
  struct Rows {
    float* p;
    int64_t ld;
  };
  auto part_rows = [&](const DevicePacked::Part& part, int64_t rows, float* scratch) {
    Rows r{packed_.data() + part.offset, ld};
    if (part.second.data) {
      gemm_.run(padded_k(part.second), staged_b_.data() + part.offset, ld, rows, scratch, part.second.rows,
                ElementType::F32);
      r = {scratch, part.second.rows};
    }
    const int64_t cols = part.second.data ? part.second.rows : part.rows;
    if (part.bias) add_bias(r.p, r.ld, part.bias, rows, cols, stream_);
    return r;
  };

  // Attention block: q, k, v and the cache for all n rows, the rest for rows
  // [row0, n) (m rows; hidden row r at x_ + r * hidden).
  const int64_t m = n - row0;
  float* x = x_.data() + row0 * c.hidden;
  // Decode rows of up to 8: each RMSNorm folded into the products around it.
  const bool fold = decode && fold_norms(n, l);
  packed_first(l.qkv, n, norm_input(x_.data(), l.attn_norm, n));
  if (lowrank) {
    if (pos > 0) lowrank->rebuild(index, pos);  // the rows this chunk attends to besides its own
    lowrank->store_rows(index, staged_b_.data() + l.qkv.parts[1].offset, staged_b_.data() + l.qkv.parts[2].offset,
                        ld, pos, n);
  }
  const int64_t q_dim = int64_t{c.n_heads} * c.head_dim, kv_dim = int64_t{c.n_kv_heads} * c.head_dim;
  float *q_out = qkv_.data(), *k_out = q_out + n * q_dim, *v_out = k_out + n * kv_dim;
  // A low-rank v without bias goes from its GEMM straight into the cache rows
  // as bf16 (the rounding rope_store_kv_rows would apply): no fp32 round trip.
  // Only where rows [pos, pos + n) are contiguous in the pool (no block table)
  // of a bf16 cache.
  const DevicePacked::Part& v_part = l.qkv.parts[2];
  const bool v_to_cache =
      v_part.second.data && !v_part.bias && !blocks && !decode && cache.type == ElementType::BF16;
  Rows q, k, v{nullptr, 0};
  if (l.qkv.stacked_second.data) {
    // q, k (and v) second factors in one batched GEMM: stacked, they share a
    // shape, so q_dim == kv_dim and their rank columns lie equally far apart.
    const DevicePacked::Part* p = l.qkv.parts.data();
    gemm_.run_batched(padded_k(p[0].second), staged_b_.data() + p[0].offset, ld, p[1].offset - p[0].offset, n,
                      q_out, q_dim, n * q_dim, v_to_cache ? 2 : 3, ElementType::F32);
    q = {q_out, q_dim}, k = {k_out, kv_dim};
    if (!v_to_cache) v = {v_out, kv_dim};
  } else {
    q = part_rows(l.qkv.parts[0], n, q_out);
    k = part_rows(l.qkv.parts[1], n, k_out);
    if (!v_to_cache) v = part_rows(v_part, n, v_out);
  }
  if (v_to_cache) {
    gemm_.run(padded_k(v_part.second), staged_b_.data() + v_part.offset, ld, n,
              static_cast<__nv_bfloat16*>(cache.v) + pos * kv_dim, kv_dim, ElementType::BF16);
  }
  const HeadShape heads{c.n_heads, c.n_kv_heads, c.head_dim};
  if (decode) {
    // Each row its own sequence: RoPE, its slot and its attention in one launch.
    // Its output in bf16, where the o projection's GEMM reads it.
    decode_attention({q.p, k.p, v.p, q.ld, k.ld, v.ld}, inv_freq_, cache, rows, static_cast<int>(n), decode->max_ctx,
                     heads, decode->workspace, decode->workspace_floats, AttentionOut::bf16(att_b_.data()), stream_);
  } else {
    rope_store_kv_rows({q.p, k.p, v.p, q.ld, k.ld, v.ld}, inv_freq_, rows, static_cast<int>(n), heads, cache,
                       q_b_.data(), stream_);
    prefill_attention(q_b_.data() + row0 * q_dim, cache, blocks, pos + static_cast<int>(row0), static_cast<int>(m),
                      heads, att_b_.data(), stream_);
  }
  linear(l.o, att_b_.data(), q_dim, m, x, true, {}, gained_output(fold, l.mlp_norm));

  // MLP block.
  const DevicePacked::Part &gate = l.gate_up.parts[0], &up = l.gate_up.parts[1];
  const size_t next = static_cast<size_t>(index) + 1;
  const float* next_gain = next < weights_.layers().size() ? weights_.layers()[next].attn_norm : weights_.final_norm();
  packed_first(l.gate_up, m, norm_input(x, l.mlp_norm, m));
  // Down's input: silu(gate)·up in act_b_, or formed from gate and up by its first product (down_in).
  const __nv_bfloat16* down_x = act_b_.data();
  int64_t down_ld = c.intermediate;
  Fold down_in;
  if (l.gate_up.stacked_second.data) {
    // bf16 gate and up (half the bytes through memory), side by side in one
    // buffer, in one batched GEMM: each half of the stacked second factor
    // reads its own staged columns.
    const int64_t inter = c.intermediate;
    __nv_bfloat16 *g = gate_up_b_.data(), *u = g + inter;
    gemm_.run_batched(padded_k(gate.second), staged_b_.data() + gate.offset, ld, up.offset - gate.offset, m, g,
                      2 * inter, inter, 2, ElementType::BF16);
    // silu(gate)·up formed as down's first product stages its input, where
    // skinny_gemm takes that product; else a silu_mul launch into act_b_.
    const DeviceLinear& d = l.down;
    Fold silu;
    silu.silu_up = u;
    // The product linear() runs first (its operands as there).
    const bool low_rank = d.low_rank();
    const SkinnyGemm down_first{low_rank ? padded_rows(d.first) : d.first, g, 2 * inter,
                                low_rank ? static_cast<void*>(rank_b_.data()) : x, low_rank ? rank_ld_ : d.out(),
                                low_rank ? ElementType::BF16 : ElementType::F32, !low_rank, 1, 0, 0, silu};
    if (!d.bias && skinny_gemm_supports(down_first, m))
      down_x = g, down_ld = 2 * inter, down_in = silu;
    else
      silu_mul(g, 2 * inter, u, 2 * inter, ElementType::BF16, m, inter, act_b_.data(), ElementType::BF16, stream_);
  } else {
    const Rows g = part_rows(gate, m, gate_.data());
    const Rows u = part_rows(up, m, up_.data());
    silu_mul(g.p, g.ld, u.p, u.ld, ElementType::F32, m, c.intermediate, act_b_.data(), ElementType::BF16, stream_);
  }
  linear(l.down, down_x, down_ld, m, x, true, down_in, gained_output(fold, next_gain));
}

int64_t Prefill::start(std::span<const int32_t> tokens, bool last_row_only) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  check(n >= 1 && n <= max_rows(), kWhere, "chunk of ", n, " tokens (1..", max_rows(), ")");
  reserve(n);
  final_row0_ = last_row_only ? n - 1 : 0;
  chunk_rows_ = n;
  hb_gained_ = false;
  FSVD_CUDA_CHECK(cudaMemcpyAsync(tokens_.data(), tokens.data(), tokens.size_bytes(), cudaMemcpyHostToDevice,
                                  stream_));
  embedding_lookup(weights_.embed(), tokens_.data(), n, x_.data(), stream_);
  return n;
}

void Prefill::run(std::span<const int32_t> tokens, int pos, const std::vector<KvCacheLayer>& caches,
                  const PagedRows& rows, const int32_t* blocks, bool last_row_only) {
  check(caches.size() == weights_.layers().size(), kWhere, caches.size(), " caches for ",
        weights_.layers().size(), " layers");
  const int64_t n = start(tokens, last_row_only);
  for (size_t i = 0; i < caches.size(); ++i)
    layer(static_cast<int>(i), pos, n, i + 1 == caches.size() ? final_row0_ : 0, caches[i], rows, blocks, nullptr);
}

void Prefill::run(std::span<const int32_t> tokens, int pos, LowRankKv& lowrank, bool last_row_only) {
  const int64_t n = start(tokens, last_row_only);
  const size_t layers = weights_.layers().size();
  for (size_t i = 0; i < layers; ++i)
    layer(static_cast<int>(i), pos, n, i + 1 == layers ? final_row0_ : 0, lowrank.scratch(),
          lowrank.pages().chunk(pos), nullptr, &lowrank);
}

void Prefill::reserve_logits(int64_t n) {
  if (logits_.size() >= static_cast<size_t>(n * weights_.config().vocab)) return;
  grow(logits_, n * weights_.config().vocab);
  ++version_;
}

void Prefill::reserve_rows(int64_t rows) {
  reserve(rows);
  reserve_logits(rows);
}

void Prefill::embed_rows(const int32_t* d_tokens, int64_t rows) {
  check(rows >= 1 && rows <= rows_, kWhere, rows, " decode rows, ", rows_, " reserved");
  final_row0_ = 0;
  chunk_rows_ = rows;
  hb_gained_ = false;
  embedding_lookup(weights_.embed(), d_tokens, rows, x_.data(), stream_);
}

void Prefill::decode_layer(int index, int64_t rows, const KvCacheLayer& cache, const PagedRows& at,
                           const DecodeAttention& attention) {
  layer(index, 0, rows, 0, cache, at, nullptr, nullptr, &attention);
}

const float* Prefill::logits(int64_t n) {
  check(n >= 1 && n <= chunk_rows_ && final_row0_ == 0, kWhere, "logits of ", n, " rows after a chunk of ",
        chunk_rows_, final_row0_ > 0 ? " run for its last row only" : "");
  const ModelConfig& c = weights_.config();
  reserve_logits(n);
  linear(weights_.lm_head(), hb_.data(), c.hidden, n, logits_.data(), false,
         norm_input(x_.data(), weights_.final_norm(), n));
  return logits_.data();
}

}  // namespace fsvd::cuda
