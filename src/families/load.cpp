#include "families/load.h"

#include <filesystem>

#include "core/error.h"
#include "families/family.h"
#include "families/asvd_family.h"
#include "families/basis_sharing_family.h"
#include "families/dobi_svd_family.h"
#include "families/gguf_family.h"
#include "families/hf_family.h"
#include "families/llama2c_family.h"
#include "families/lowrank_arena_family.h"
#include "families/native_family.h"
#include "families/palu_family.h"
#include "families/svd_llm_family.h"

namespace fsvd {

namespace {

// Detection order: the first family whose mismatch() is empty wins. Families
// stored as Hugging Face directories with extra structure (low-rank ones) must
// come before the plain "hf" entry.
const Family kFamilies[] = {
    {"native", native_mismatch, load_native},
    {"basis_sharing", basis_sharing_mismatch, load_basis_sharing},
    {"asvd", asvd_mismatch, load_asvd},
    {"lowrank_arena", lowrank_arena_mismatch, load_lowrank_arena},
    {"dobi_svd", dobi_svd_mismatch, load_dobi_svd},  // before hf: its directories look like dense ones
    {"palu", palu_mismatch, load_palu},
    {"hf", hf_mismatch, load_hf},
    {"gguf", gguf_mismatch, load_gguf},
    {"svd_llm", svd_llm_mismatch, load_svd_llm},
    {"llama2c", llama2c_mismatch, load_llama2c},
};

const Family& detect(const std::string& path) {
  check(std::filesystem::exists(path), path, "no such file or directory");
  std::string tried;
  for (const Family& f : kFamilies) {
    const std::string why = f.mismatch(path);
    if (why.empty()) return f;
    tried += std::string("\n  ") + f.name + ": " + why;
  }
  fail(path, "not a checkpoint of any supported family; tried:", tried);
}

const Family& by_name(const std::string& name, const std::string& path) {
  std::string names;
  for (const Family& f : kFamilies) {
    if (name == f.name) return f;
    names += (names.empty() ? "" : ", ") + std::string(f.name);
  }
  fail(path, "unknown checkpoint family '", name, "' (valid: ", names, ")");
}

}  // namespace

std::string detect_family(const std::string& path) { return detect(path).name; }

Model load_model(const std::string& path, const LoadOptions& options) {
  const Family& family = options.family.empty() ? detect(path) : by_name(options.family, path);
  return family.load(path);
}

}  // namespace fsvd
