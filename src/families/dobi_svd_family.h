#pragma once
// Dobi-SVD, in both published forms. Note its naming is the opposite of
// ASVD's: `ALinear` [r, in] is applied first, `BLinear` [out, r] second.
//  - Remapping (the public DobiSVD-<model>-<ratio> directories): a plain
//    LlamaForCausalLM config.json, pytorch_model.bin with everything but the
//    attention and MLP, and remapping_weight.pt: module -> 8-bit singular
//    vectors (dobi_codes.h) with per-vector absmax and an fp16 tail for
//    non-square matrices. A directory holding remapping_weight.pt is Dobi-SVD
//    whatever its config says: read as dense it would lack those linears.
//  - Non-remapped: a whole-model pickle {'model': LlamaForCausalLM, ...}
//    (a file, or DobiSVD_Model.pt in a directory) whose compressed linears are
//    modules.module.SVDTransformLayer holding ALinear and BLinear.
#include <string>

#include "model/model.h"

namespace fsvd {

std::string dobi_svd_mismatch(const std::string& path);
Model load_dobi_svd(const std::string& path);

}  // namespace fsvd
