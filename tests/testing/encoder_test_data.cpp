#include "testing/encoder_test_data.h"

#include <random>

#include "backends/cpu/cpu_encoder.h"
#include "testing/random_model.h"

namespace fsvd::testing {

std::string small_vocab_txt(int vocab) {
  std::string text = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  for (int i = 5; i < vocab; ++i) text += "w" + std::to_string(i) + "\n";
  return text;
}

WordPieceTokenizer small_tokenizer(int vocab) {
  return WordPieceTokenizer(parse_vocab_txt(small_vocab_txt(vocab), "vocab"), WordPieceOptions{}, "vocab");
}

std::vector<EncoderInput> random_inputs(int count, int max_len, int first_id, int last_id, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> len(4, max_len), id(first_id, last_id);
  std::vector<EncoderInput> out(count);
  for (EncoderInput& in : out) {
    const int n = len(rng);
    in.ids.push_back(2);
    for (int t = 2; t < n; ++t) in.ids.push_back(id(rng));
    in.ids.push_back(3);
    in.type_ids.assign(in.ids.size(), 0);
  }
  return out;
}

void make_layers_low_rank(EncoderModel& m, int64_t rank, uint64_t seed) {
  for (EncoderLayer& l : m.layers) {
    for (Linear* lin : {&l.q, &l.k, &l.v, &l.o, &l.up, &l.down}) {
      const int64_t out = lin->out(), in = lin->in();
      const std::vector<float> a = random_normal(out * rank, ++seed, 1.0f), b = random_normal(rank * in, ++seed, 1.0f);
      std::vector<float> w(out * in, 0.0f);
      for (int64_t o = 0; o < out; ++o)
        for (int64_t r = 0; r < rank; ++r)
          for (int64_t i = 0; i < in; ++i) w[o * in + i] += a[o * rank + r] * b[r * in + i] / static_cast<float>(in);
      lin->first = Tensor({out, in}, std::move(w));
    }
    l.qkv = {};
  }
  m.pack();
}

double relative_state_error(const EncoderModel& a, const EncoderModel& b, std::span<const EncoderInput> inputs) {
  std::vector<float> sa, sb;
  std::vector<int64_t> offsets;
  CpuEncoder(a, 1).forward(inputs, sa, offsets);
  CpuEncoder(b, 1).forward(inputs, sb, offsets);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < sa.size(); ++i) {
    diff += (double{sa[i]} - sb[i]) * (double{sa[i]} - sb[i]);
    norm += double{sa[i]} * sa[i];
  }
  return diff / norm;
}

}  // namespace fsvd::testing
