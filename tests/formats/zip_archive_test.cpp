#include "formats/zip_archive.h"

#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "testing/fails_with.h"
#include "testing/files.h"

namespace fsvd {
namespace {

using test::fails_with;
using Bytes = std::vector<uint8_t>;

struct TestEntry {
  std::string name;
  Bytes data;
  bool deflate = false;
};

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng() % 7);  // few symbols, so deflate shrinks them
  return b;
}

// Writes the entries with minizip's own writer and returns the archive bytes.
Bytes make_zip(const std::vector<TestEntry>& entries) {
  const std::string path = test::unique_temp_path("zip_archive_test") + ".zip";
  zipFile zf = zipOpen64(path.c_str(), APPEND_STATUS_CREATE);
  EXPECT_NE(zf, nullptr);
  for (const auto& e : entries) {
    zip_fileinfo info{};
    EXPECT_EQ(zipOpenNewFileInZip64(zf, e.name.c_str(), &info, nullptr, 0, nullptr, 0, nullptr,
                                    e.deflate ? Z_DEFLATED : 0, e.deflate ? 6 : 0, 0),
              ZIP_OK);
    EXPECT_EQ(zipWriteInFileInZip(zf, e.data.data(), static_cast<unsigned>(e.data.size())), ZIP_OK);
    EXPECT_EQ(zipCloseFileInZip(zf), ZIP_OK);
  }
  EXPECT_EQ(zipClose(zf, nullptr), ZIP_OK);
  std::ifstream f(path, std::ios::binary);
  Bytes out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  EXPECT_FALSE(out.empty()) << path;
  return out;
}

// Offset of the central directory record of the entry at `index`.
size_t central_record(const Bytes& zip, int index) {
  size_t pos = 0;
  for (int seen = -1; seen < index; ++seen) {
    const uint8_t sig[4] = {'P', 'K', 1, 2};
    const auto it = std::search(zip.begin() + static_cast<std::ptrdiff_t>(pos ? pos + 4 : 0), zip.end(), sig, sig + 4);
    EXPECT_NE(it, zip.end());
    pos = static_cast<size_t>(it - zip.begin());
  }
  return pos;
}

void put_u32(Bytes& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }

TEST(ZipArchive, ReadsStoredEntriesInPlaceAndInflatesDeflatedOnes) {
  const std::vector<TestEntry> entries = {{"a/data.pkl", random_bytes(37, 1)},
                                          {"a/data/0", random_bytes(1001, 2)},
                                          {"a/packed", random_bytes(3333, 3), true},
                                          {"a/empty", {}}};
  const Bytes zip = make_zip(entries);
  const ZipArchive archive(zip.data(), zip.size(), "mem.zip");
  EXPECT_EQ(archive.names(), (std::vector<std::string>{"a/data.pkl", "a/data/0", "a/packed", "a/empty"}));
  for (const auto& e : entries) {
    const auto bytes = archive.read(e.name);
    EXPECT_EQ(Bytes(bytes.begin(), bytes.end()), e.data) << e.name;
    EXPECT_EQ(archive.size_of(e.name), e.data.size());
    const bool inside = bytes.data() >= zip.data() && bytes.data() + bytes.size() <= zip.data() + zip.size();
    EXPECT_EQ(inside, !e.deflate || e.data.empty()) << e.name << ": stored entries must be views into the input";
  }
  EXPECT_LT(zip.size(), 37u + 1001u + 3333u) << "the deflated entry should have been compressed";
  EXPECT_TRUE(fails_with([&] { archive.read("a/missing"); }, "no entry named 'a/missing'"));
}

TEST(ZipArchive, RefusesWhatIsNotAZip) {
  const Bytes junk = random_bytes(100, 4);
  EXPECT_TRUE(fails_with([&] { ZipArchive(junk.data(), junk.size(), "junk.bin"); }, "junk.bin: not a zip archive"));
  Bytes fake = junk;
  fake[0] = 'P';
  fake[1] = 'K';
  EXPECT_TRUE(fails_with([&] { ZipArchive(fake.data(), fake.size(), "fake.zip"); }, "central directory"));
}

TEST(ZipArchive, RefusesEntriesPastTheEnd) {
  Bytes zip = make_zip({{"x/data/0", random_bytes(64, 5)}});
  // Central record and local header (at 0) agree on the lie, so only the bounds check can catch it.
  for (const size_t sizes : {central_record(zip, 0) + 20, size_t{18}}) {
    put_u32(zip, sizes, 1u << 30);      // compressed size
    put_u32(zip, sizes + 4, 1u << 30);  // uncompressed size
  }
  EXPECT_TRUE(fails_with([&] { ZipArchive(zip.data(), zip.size(), "big.zip"); }, "runs past the end"));
}

TEST(ZipArchive, RefusesSizesBeyondDeflatesRatio) {
  Bytes zip = make_zip({{"x/packed", random_bytes(500, 6), true}});
  put_u32(zip, central_record(zip, 0) + 24, 0xfffffff0u);
  put_u32(zip, 22, 0xfffffff0u);  // the local header's copy
  EXPECT_TRUE(fails_with([&] { ZipArchive(zip.data(), zip.size(), "bomb.zip"); }, "maximum ratio"));
}

TEST(ZipArchive, DetectsCorruptDeflatedData) {
  const Bytes original = random_bytes(2000, 7);
  Bytes zip = make_zip({{"x/packed", original, true}});
  // Flip a byte inside the deflate stream (just after the 30-byte local header and the name).
  zip[30 + 8 + 5] ^= 0x5a;
  const ZipArchive archive(zip.data(), zip.size(), "flipped.zip");
  EXPECT_TRUE(fails_with([&] { archive.read("x/packed"); }, "entry 'x/packed'"));
}

TEST(ZipArchive, RefusesDuplicateNames) {
  const Bytes zip = make_zip({{"x/a", random_bytes(3, 8)}, {"x/a", random_bytes(4, 9)}});
  EXPECT_TRUE(fails_with([&] { ZipArchive(zip.data(), zip.size(), "dup.zip"); }, "duplicate entry 'x/a'"));
}

// Every truncation must give an Error, and many random byte flips an Error
// or a consistent archive, never a crash (ASan runs check the "never").
TEST(ZipArchive, SurvivesTruncationAndCorruption) {
  const std::vector<TestEntry> entries = {{"a/data.pkl", random_bytes(50, 10)},
                                          {"a/data/0", random_bytes(300, 11), true}};
  const Bytes zip = make_zip(entries);
  for (size_t n = 0; n < zip.size(); ++n)
    EXPECT_THROW(ZipArchive(zip.data(), n, "cut.zip"), Error) << "truncated to " << n << " bytes";
  std::mt19937 rng(12);
  for (int trial = 0; trial < 2000; ++trial) {
    Bytes bad = zip;
    bad[rng() % bad.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    try {
      const ZipArchive archive(bad.data(), bad.size(), "bad.zip");
      for (const auto& name : archive.names()) {
        const auto bytes = archive.read(name);
        EXPECT_EQ(bytes.size(), archive.size_of(name));
      }
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace fsvd
