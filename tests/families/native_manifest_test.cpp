// The flashsvd.json parser on its own (no tensors): what it accepts writes
// back unchanged; malformed entries are Errors naming the file and the entry.
#include "families/native_manifest.h"

#include <gtest/gtest.h>

#include "testing/fails_with.h"

namespace fsvd {
namespace {

using nlohmann::json;
using test::fails_with;

// One layer: q|k|v low-rank (4, 2, 2), o dense, gate|up packed dense, down low-rank 3.
NativeManifest tiny() {
  NativeManifest m;
  m.config.hidden = 8;
  m.config.intermediate = 12;
  m.config.n_layers = 1;
  m.config.n_heads = 2;
  m.config.n_kv_heads = 1;
  m.config.head_dim = 4;
  m.config.vocab = 10;
  m.config.max_seq = 16;
  m.config.rope_theta = 123456.7f;
  m.config.rms_eps = 1.1e-6f;
  m.source_family = "gguf";
  m.source_path = "/models/x.gguf";
  m.provenance = {{"method", "svd-llm"}, {"ratio", 0.4}};
  m.embed = "embed";
  m.final_norm = "final_norm";
  m.lm_head = {"lm_head.first", -1, -1, "", "", -1};
  NativeLayer l;
  l.attn_norm = "layers.0.attn_norm";
  l.mlp_norm = "layers.0.mlp_norm";
  l.linears[0] = {"layers.0.qkv.first", 0, 4, "layers.0.q.second", "layers.0.q.bias", 4};
  l.linears[1] = {"layers.0.qkv.first", 4, 6, "layers.0.k.second", "", 2};
  l.linears[2] = {"layers.0.qkv.first", 6, 8, "layers.0.v.second", "", 2};
  l.linears[3] = {"layers.0.o.first", -1, -1, "", "", -1};
  l.linears[4] = {"layers.0.gate_up.first", 0, 12, "", "", -1};
  l.linears[5] = {"layers.0.gate_up.first", 12, 24, "", "", -1};
  l.linears[6] = {"layers.0.down.first", -1, -1, "layers.0.down.second", "", 3};
  m.layers.push_back(l);
  return m;
}

json tiny_json() { return json::parse(native_manifest_json(tiny())); }

::testing::AssertionResult refused(const json& j, const std::string& needle) {
  const auto named = fails_with([&] { parse_native_manifest(j.dump(), "dir/flashsvd.json"); }, "dir/flashsvd.json: ");
  if (!named) return named;
  return fails_with([&] { parse_native_manifest(j.dump(), "dir/flashsvd.json"); }, needle);
}

TEST(NativeManifest, WritesAndParsesBackExactly) {
  const std::string text = native_manifest_json(tiny());
  const NativeManifest m = parse_native_manifest(text, "flashsvd.json");
  EXPECT_EQ(native_manifest_json(m), text);
  EXPECT_EQ(m.config.rope_theta, 123456.7f);
  EXPECT_EQ(m.config.rms_eps, 1.1e-6f);
  EXPECT_EQ(m.layers[0].linears[1].row_begin, 4);
  EXPECT_EQ(m.layers[0].linears[6].rank, 3);
  EXPECT_EQ(m.provenance["method"], "svd-llm");
  const json j = json::parse(text);
  EXPECT_EQ(j["format"], "flashsvd-native");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["shared"], json::array());
  EXPECT_FALSE(j["layers"][0]["o"].contains("rank")) << "dense linears carry no rank";
}

TEST(NativeManifest, SharedTensorsNeedTwoOwners) {
  NativeManifest m = tiny();
  m.config.n_layers = 2;
  m.layers.push_back(m.layers[0]);
  m.layers[1].attn_norm = "layers.1.attn_norm";
  m.layers[1].mlp_norm = "layers.1.mlp_norm";
  m.layers[1].linears[0].second = "layers.1.q.second";
  m.layers[1].linears[0].bias = "layers.1.q.bias";
  const auto shared = shared_tensors(m);
  // q|k|v and gate|up packs, k and v second factors, o first, down first and second: all in both layers.
  ASSERT_EQ(shared.size(), 7u);
  EXPECT_EQ(shared[0].tensor, "layers.0.qkv.first");
  EXPECT_EQ(shared[0].users.size(), 6u);
  EXPECT_EQ(shared[1].tensor, "layers.0.k.second");
  for (const auto& s : shared) EXPECT_NE(s.tensor, "layers.0.q.second") << "used by one owner only";
  EXPECT_EQ(native_manifest_json(parse_native_manifest(native_manifest_json(m), "x")), native_manifest_json(m));
}

TEST(NativeManifest, MalformedEntriesAreNamed) {
  json j = tiny_json();
  EXPECT_TRUE(refused(json::array(), "the file is array, not an object"));
  j.erase("embed");
  EXPECT_TRUE(refused(j, "the file: missing 'embed'"));
  j = tiny_json();
  j["layers"][0]["q"].erase("rank");
  EXPECT_TRUE(refused(j, "layers[0].q: 'second' and 'rank' must come together"));
  j = tiny_json();
  j["layers"][0]["q"]["rows"] = {0, 4, 8};
  EXPECT_TRUE(refused(j, "layers[0].q.rows is [0,4,8], not a [begin, end] pair"));
  j = tiny_json();
  j["layers"][0]["q"]["rows"] = {-1, 3};
  EXPECT_TRUE(refused(j, "layers[0].q.rows[0] = -1 is outside"));
  j = tiny_json();
  j["layers"][0]["k"]["rank"] = 99999999999;
  EXPECT_TRUE(refused(j, "layers[0].k.rank = 99999999999 is outside"));
  j = tiny_json();
  j["layers"][0]["gate"]["rows"] = {0, 11};
  EXPECT_TRUE(refused(j, "layers[0].gate.rows [0, 11) hold 11 rows but its output dimension is 12"));
  j = tiny_json();
  j["layers"][0]["o"]["first"] = "";
  EXPECT_TRUE(refused(j, "layers[0].o.first is an empty tensor name"));
  j = tiny_json();
  j["dtype"] = "Q4_0";
  EXPECT_TRUE(refused(j, "dtype 'Q4_0' is not F32, F16 or BF16"));
  j = tiny_json();
  j["config"]["rope_theta"] = 1e300;
  EXPECT_TRUE(refused(j, "config.rope_theta is 1e+300, not a finite float"));
  j = tiny_json();
  j["config"]["kv_heads"] = 3;
  EXPECT_TRUE(refused(j, "heads 2 not a multiple of kv heads 3"));
  j = tiny_json();
  j["config"]["rope_scaling"]["type"] = "yarn";
  EXPECT_TRUE(refused(j, "unsupported rope_scaling type 'yarn'"));
  j = tiny_json();
  j["source"] = "x";
  EXPECT_TRUE(refused(j, "source is string, not an object"));
  j = tiny_json();
  j["layers"][0]["up"]["first"] = "other";
  EXPECT_TRUE(refused(j, "layers[0].up: the first factors of a packed group must be consecutive rows of one tensor"));
  j = tiny_json();
  j["layers"][0]["v"].erase("rows");
  EXPECT_TRUE(refused(j, "layers[0].v: the first factors of a packed group"));
  EXPECT_TRUE(fails_with([] { parse_native_manifest("{", "dir/flashsvd.json"); }, "dir/flashsvd.json: not valid JSON"));
}

}  // namespace
}  // namespace fsvd
