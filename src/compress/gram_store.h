#pragma once
// Every layer's calibration statistics (XᵀX per linear input) in one file, so
// compressions of the same dense model on the same calibration tokens (other
// ratios, allocations) skip the passes over the text:
// `flashsvd compress --stats FILE`. Only the lower triangles are stored.
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "compress/calibration.h"
#include "model/model.h"

namespace fsvd {

// What the statistics were computed from; a file is used only when all of it matches.
struct GramStoreKey {
  int32_t layers = 0;
  std::vector<int64_t> dims;  // width of each LinearInput
  int64_t tokens = 0;
  int32_t window = 0;
  uint64_t fingerprint = 0;  // FNV-1a of the calibration tokens and a sample of the dense weights

  bool operator==(const GramStoreKey&) const = default;
};

// The key of `dense` calibrated on `tokens` in windows of `window`. The
// weights hashed are layer 0's q and the final norm: enough to tell models apart.
GramStoreKey gram_store_key(const Model& dense, std::span<const int32_t> tokens, int window);

// Writes layers in order to `path`.tmp; commit() renames it to `path`, so an
// interrupted run leaves no file that passes for a complete one.
class GramStoreWriter {
 public:
  GramStoreWriter(std::string path, GramStoreKey key);
  void add(const LayerGrams& layer);
  void commit();

 private:
  std::string path_;
  GramStoreKey key_;
  std::ofstream out_;
  int32_t written_ = 0;
};

// Reads one layer at a time (bounded memory). Throws Error naming the file when
// it is not a statistics file, is truncated, or its key differs from `expected`.
class GramStoreReader {
 public:
  GramStoreReader(std::string path, const GramStoreKey& expected);
  LayerGrams layer(int32_t index);

 private:
  std::string path_;
  GramStoreKey key_;
  std::ifstream in_;
  int64_t data_start_ = 0;
  int64_t layer_bytes_ = 0;
};

}  // namespace fsvd
