#pragma once
// Helpers every family loader uses, so all report problems the same way: the
// file, the tensor's name in that file, what was expected.
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/model.h"

namespace fsvd {

// Loads tensors by their names in a checkpoint, checks each shape against the
// config and remembers which were used, so tensors the family does not know
// (a model feature that would otherwise be silently dropped) are an error.
class TensorTaker {
 public:
  using Loader = std::function<Tensor(const std::string& name)>;
  // `names`: every tensor in the checkpoint; `where`: the file named in errors.
  TensorTaker(const std::vector<std::string>& names, Loader load, std::string where);

  bool contains(const std::string& name) const { return names_.count(name) != 0; }
  // Throws naming the tensor and `where` if it is absent or its shape differs.
  Tensor take(const std::string& name, const std::vector<int64_t>& shape);
  // Empty tensor when absent.
  Tensor take_optional(const std::string& name, const std::vector<int64_t>& shape);
  // Counts a tensor as used without loading it (redundant copies, derivable buffers).
  void skip(const std::string& name) { used_.insert(name); }
  // Throws listing the tensors nobody took or skipped.
  void check_all_used() const;

 private:
  std::set<std::string> names_;
  Loader load_;
  std::string where_;
  std::set<std::string> used_;
};

// What every checkpoint with Hugging Face LLaMA names stores alike: the
// embedding, the final norm, lm_head and each layer's two norms (m.config set
// first). A tied lm_head is the embedding and a stored copy is ignored, as in
// transformers; an untied one must be stored (`where` names the file). An
// lm_head the family has already set (a factorized one) is kept.
void take_hf_embeddings_and_norms(Model& m, TensorTaker& t, const std::string& where);

// The last step of every family: validate shapes against the config, then pack.
Model finish_model(Model model);

}  // namespace fsvd
