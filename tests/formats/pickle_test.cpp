#include "formats/pickle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>

#include "testing/fails_with.h"

namespace fsvd::pickle {
namespace {

using test::fails_with;
using namespace std::string_literals;  // "..."s keeps embedded NUL bytes

std::unique_ptr<Pickle> parse(const std::string& bytes) {
  return std::make_unique<Pickle>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem.pkl");
}

template <typename T>
T get(const Value& v) {
  const T* p = std::get_if<T>(&v);
  EXPECT_NE(p, nullptr) << "found " << describe(v);
  return p ? *p : T{};
}

std::string le32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string unicode(const std::string& s) { return "X" + le32(static_cast<uint32_t>(s.size())) + s; }

TEST(Pickle, ReadsScalarsContainersAndMemoAliases) {
  // [-5, 200, 60000, -2^40, 2.5, 'héllo', b'\x00\x01', None, True, False, (1,), (1,2), (1,2,3), {'k': 7, 3: 'v'}, <memo 0>]
  const std::string bytes = "\x80\x02]q\x00(J"s + le32(static_cast<uint32_t>(-5)) + "K\xc8M\x60\xea" +
                            "\x8a\x06\x00\x00\x00\x00\x00\xff"s + "G\x40\x04\x00\x00\x00\x00\x00\x00"s +
                            "\x8c\x06h\xc3\xa9llo" + "C\x02\x00\x01"s + "N\x88\x89" +
                            "K\x01\x85K\x01K\x02\x86K\x01K\x02K\x03\x87" + "}(" + unicode("k") + "K\x07K\x03" +
                            unicode("v") + "uh\x00" "e."s;
  const auto p = parse(bytes);
  List* list = get<List*>(p->root());
  ASSERT_EQ(list->items.size(), 15u);
  const auto& it = list->items;
  EXPECT_EQ(get<int64_t>(it[0]), -5);
  EXPECT_EQ(get<int64_t>(it[1]), 200);
  EXPECT_EQ(get<int64_t>(it[2]), 60000);
  EXPECT_EQ(get<int64_t>(it[3]), -(int64_t{1} << 40));
  EXPECT_EQ(get<double>(it[4]), 2.5);
  EXPECT_EQ(get<std::string_view>(it[5]), "h\xc3\xa9llo");
  EXPECT_EQ(get<Bytes>(it[6]).data, std::string_view("\x00\x01", 2));
  EXPECT_TRUE(std::holds_alternative<None>(it[7]));
  EXPECT_EQ(get<bool>(it[8]), true);
  EXPECT_EQ(get<bool>(it[9]), false);
  for (size_t n = 1; n <= 3; ++n) {
    const Tuple* t = get<Tuple*>(it[9 + n]);
    ASSERT_EQ(t->items.size(), n);
    for (size_t k = 0; k < n; ++k) EXPECT_EQ(get<int64_t>(t->items[k]), static_cast<int64_t>(k + 1));
  }
  const Dict* d = get<Dict*>(it[13]);
  ASSERT_EQ(d->items.size(), 2u);
  EXPECT_EQ(get<int64_t>(*d->find(std::string_view("k"))), 7);
  EXPECT_EQ(get<std::string_view>(*d->find(int64_t{3})), "v");
  EXPECT_EQ(d->find(std::string_view("v")), nullptr);
  EXPECT_EQ(get<List*>(it[14]), list) << "BINGET must return the memoized list itself";
}

// Python writes ints of any size; those beyond int64 (a tokenizer's
// model_max_length of int(1e30)) load as BigInt, those inside stay int64
// whatever their encoding.
TEST(Pickle, ReadsIntsOfAnySize) {
  // [int(1e30), 2**63, -2**80, 2**2048 (LONG4), -2**63 padded to 10 bytes, LONG '-42L', LONG 10**25, LONG -10**400]
  const std::string bytes = "\x80\x02](\x8a\x0d\x00\x00\x00\x00\x00\x00uF\xd0\x9c,\x9f\x0c"s +
                            "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00"s +
                            "\x8a\x0b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff"s + "\x8b" + le32(257) +
                            std::string(256, '\0') + "\x01" + "\x8a\x0a\x00\x00\x00\x00\x00\x00\x00\x80\xff\xff"s +
                            "L-42L\n" + "L1" + std::string(25, '0') + "\n" + "L-1" + std::string(400, '0') + "L\ne.";
  const auto p = parse(bytes);
  const auto& it = get<List*>(p->root())->items;
  ASSERT_EQ(it.size(), 8u);
  EXPECT_EQ(get<BigInt>(it[0]).approx, 1e30);
  EXPECT_EQ(get<BigInt>(it[1]).approx, 0x1p63);
  EXPECT_EQ(get<BigInt>(it[2]).approx, -0x1p80);
  EXPECT_EQ(get<BigInt>(it[3]).approx, HUGE_VAL);
  EXPECT_EQ(get<int64_t>(it[4]), INT64_MIN);
  EXPECT_EQ(get<int64_t>(it[5]), -42);
  EXPECT_EQ(get<BigInt>(it[6]).approx, 1e25);
  EXPECT_EQ(get<BigInt>(it[7]).approx, -HUGE_VAL);
  EXPECT_EQ(describe(it[0]), "int beyond 64 bits");
}

TEST(Pickle, GlobalAndReduceStayInert) {
  const auto marker = std::filesystem::path(::testing::TempDir()) / "flashsvd_pickle_pwned";
  std::filesystem::remove(marker);
  const auto p = parse("\x80\x02\x63os\nsystem\nq\x00"s + unicode("touch " + marker.string()) + "\x85R.");
  const Object* o = get<Object*>(p->root());
  EXPECT_EQ(o->cls->qualified(), "os.system");
  const Tuple* args = get<Tuple*>(o->args);
  ASSERT_EQ(args->items.size(), 1u);
  EXPECT_EQ(get<std::string_view>(args->items[0]), "touch " + marker.string());
  EXPECT_TRUE(std::holds_alternative<None>(o->state));
  EXPECT_EQ(describe(p->root()), "object of class os.system");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the pickle was executed";
}

TEST(Pickle, NewObjAndBuildMakeRecords) {
  // STACK_GLOBAL('mod', 'Cls'), NEWOBJ(), BUILD({'a': 1})
  const auto p = parse("\x80\x04\x8c\x03mod\x8c\x03\x43ls\x93)\x81}\x8c\x01\x61K\x01sb.");
  const Object* o = get<Object*>(p->root());
  EXPECT_EQ(o->cls->qualified(), "mod.Cls");
  EXPECT_EQ(get<int64_t>(*get<Dict*>(o->state)->find(std::string_view("a"))), 1);
}

TEST(Pickle, RebuildsTensorsParametersAndOrderedDicts) {
  // OrderedDict(w=Parameter(_rebuild_tensor_v2(storage('3', Half, numel 20), 4, (2, 3), (3, 1), False, OrderedDict())))
  const std::string tensor = "\x63torch._utils\n_rebuild_tensor_v2\n((" + unicode("storage") +
                             "\x63torch\nHalfStorage\n" + unicode("3") + unicode("cpu") + "K\x14tQK\x04K\x02K\x03\x86K\x03K\x01\x86\x89"
                             "\x63\x63ollections\nOrderedDict\n)RtR";
  const std::string bytes = "\x80\x02\x63\x63ollections\nOrderedDict\n)R" + unicode("w") +
                            "\x63torch._utils\n_rebuild_parameter\n(" + tensor + "\x88\x63\x63ollections\nOrderedDict\n)RtRs.";
  const auto p = parse(bytes);
  const Dict* d = get<Dict*>(p->root());
  const TensorRef* t = get<const TensorRef*>(*d->find(std::string_view("w")));
  EXPECT_EQ(t->storage->dtype, DType::F16);
  EXPECT_EQ(t->storage->key, "3");
  EXPECT_EQ(t->storage->location, "cpu");
  EXPECT_EQ(t->storage->numel, 20);
  EXPECT_EQ(t->offset, 4);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->stride, (std::vector<int64_t>{3, 1}));
}

TEST(Pickle, RefusesHostileAndMalformedInput) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\x80\x02\x63\x62uiltins\ngetattr\n\x63os\nsystem\n" + unicode("system") + "\x86R" + unicode("id") + "\x85R.",
       "callable is object of class builtins.getattr, not a global name"},
      {"\x80\x02}q\x00h\x07."s, "memo index 7 was never stored"},
      {"\x80\x02j\xff\xff\xff\xff.", "memo index 4294967295"},
      {"\x80\x02s.", "opcode SETITEM at byte 2: stack underflow"},
      {"\x80\x02(K\x01\x86.", "stack underflow"},
      {"\x80\x02K\x01u.", "no MARK"},
      {"\x80\x02}(K\x01u.", "odd number"},
      {"\x80\x02" + std::string(1001, '(') + ".", "MARKs nest deeper than 1000"},
      {"\x80\x02K\x01", "without a STOP"},
      {"\x80\x02.", "the stack is empty"},
      {"\x80\x06N.", "protocol 6 is not supported"},
      {"\x80\x02(lp0\n.", "unsupported opcode"},
      {"\x80\x02I1\n.", "opcode INT at byte 2"},
      {"\x80\x02X\xff\xff\xff\x7f", "needs 2147483647 bytes"},
      {"\x80\x02\x8d\x00\x00\x00\x00\x00\x00\x00\x40"s, "needs 4611686018427387904 bytes"},
      {"\x80\x02\x8b\xff\xff\xff\xff."s, "opcode LONG4 at byte 2: negative byte count -1"},
      {"\x80\x02L12a\n.", "opcode LONG at byte 2: '12a' is not a decimal integer"},
      {"\x80\x02LL\n.", "'' is not a decimal integer"},
      {"\x80\x02L" + std::string(2000, '9'), "line not terminated by a newline within 1024 bytes"},
      {"\x80\x02}\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01K\x01s."s, "dict key is int beyond 64 bits"},
      {"\x80\x02\x63torch._utils\n_rebuild_tensor_v2\n((" + unicode("storage") + "\x63torch\nFloatStorage\n" +
           unicode("0") + unicode("cpu") + "K\x01tQ\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00))tR."s,
       "storage offset must be a non-negative int, found int beyond 64 bits"},
      {"\x80\x02}K\x01K\x02\x86K\x01s.", "dict key is tuple"},
      {"\x80\x02K\x01K\x02\x61.", "expected a list on the stack, found int"},
      {"\x80\x02\x63os\n" + std::string(2000, 'a'), "not terminated by a newline"},
      {"\x80\x02K\x01)R.", "callable is int"},
      {"\x80\x02\x63os\nsystem\nK\x01R.", "expected an argument tuple, found int"},
      {"\x80\x02]N\x62.", "cannot set the state of list"},
      {"\x80\x02(" + unicode("storage") + "\x63os\nsystem\n" + unicode("0") + unicode("cpu") + "K\x01tQ.",
       "storage type os.system is not a torch storage"},
      {"\x80\x02(" + unicode("storage") + "\x63torch\nComplexFloatStorage\n" + unicode("0") + unicode("cpu") +
           "K\x01tQ.",
       "unsupported storage type torch.ComplexFloatStorage"},
      {"\x80\x02K\x01Q.", "persistent id is not"},
      {"\x80\x02\x63torch._utils\n_rebuild_tensor_v2\n(K\x01K\x02tR.", "takes at least 4 arguments, got 2"},
      {"\x80\x02\x63torch._utils\n_rebuild_tensor_v2\n(K\x01K\x02K\x03K\x04tR.", "first argument is int, not a storage"},
      {"\x80\x02\x63torch._utils\n_rebuild_parameter\nN\x85R.", "_rebuild_parameter needs a tensor"},
  };
  for (const auto& [bytes, needle] : cases) EXPECT_TRUE(fails_with([&] { parse(bytes); }, needle)) << needle;
}

// Self-referencing containers are legal pickles; the arena frees them (ASan's leak check).
TEST(Pickle, CyclesDoNotLeak) {
  const auto p = parse("\x80\x02]q\x00h\x00\x61."s);
  List* l = get<List*>(p->root());
  ASSERT_EQ(l->items.size(), 1u);
  EXPECT_EQ(get<List*>(l->items[0]), l);
}

// Every prefix and many random corruptions of a valid pickle: an Error or a value, never a crash.
TEST(Pickle, SurvivesTruncationAndCorruption) {
  const std::string good = "\x80\x02}q\x00("s + unicode("a") + "]q\x01(K\x01G\x3f\xf0\x00\x00\x00\x00\x00\x00"s +
                           "\x8c\x02hie" + unicode("b") + "h\x01" + unicode("c") + "\x63m\nC\n)\x81}b" + "u.";
  ASSERT_NO_THROW(parse(good));
  for (size_t n = 0; n < good.size(); ++n) EXPECT_THROW(parse(good.substr(0, n)), Error) << "prefix " << n;
  std::mt19937 rng(77);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string bad = good;
    for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
    try {
      parse(bad);
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace fsvd::pickle
