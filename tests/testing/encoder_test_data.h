#pragma once
// What the encoder compression tests share: a WordPiece tokenizer over the
// small random encoders' vocabulary, random sentences of it, weights of a
// chosen rank, and the distance between two encoders' final states.
#include <cstdint>
#include <span>
#include <vector>

#include "model/encoder.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace fsvd::testing {

// [PAD] [UNK] [CLS] [SEP] [MASK], then w5, w6, ... up to `vocab` ids.
std::string small_vocab_txt(int vocab);
WordPieceTokenizer small_tokenizer(int vocab);

// `count` inputs of 4..`max_len` tokens ([CLS] ... [SEP]) drawn from ids [first_id, last_id].
std::vector<EncoderInput> random_inputs(int count, int max_len, int first_id, int last_id, uint64_t seed);

// Replaces every layer linear's weight by a random product of rank `rank` (biases kept), repacked.
void make_layers_low_rank(EncoderModel& m, int64_t rank, uint64_t seed);

// Mean squared difference of the two encoders' final states on `inputs`, over the mean square of a's.
double relative_state_error(const EncoderModel& a, const EncoderModel& b, std::span<const EncoderInput> inputs);

}  // namespace fsvd::testing
