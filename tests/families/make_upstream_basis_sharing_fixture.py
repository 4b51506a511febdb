#!/usr/bin/env python3
"""Basis Sharing fixture written by the upstream code itself:
tests/fixtures/families/basis_sharing/upstream/.

Upstream: github.com/TUDa-HWAI/Basis_Sharing at commit
8fa941e03cdffe9ebfd0da8a74d2413132642454 (2024-10-02). Its
model_factory.create_model() builds the ShareLlamaForCausalLM (calibration,
per-group whitened SVD, coefficients) and saves it with
save_pretrained(safe_serialization=False) + the tokenizer, exactly as test.py
does with `save_untrained_model: true`; that model object gives the reference
logits. The input is a tiny random LLaMA (3 layers so that a group of 2 and a
remainder group of 1 both occur; GQA 4/2 heads).

Monkeypatched, and only these:
  - prepare_data (downloads wikitext): random token ids instead.
  - ShareConfig.name_map / weight_info gain an entry for the tiny model, as
    upstream does for each model it supports.
Upstream runs on the CPU as written (device_map "cpu"/"auto").

Versions: Python 3.11, torch 2.4.0 (CPU use of the PyPI wheel),
transformers 4.45.1, accelerate 0.34.2, sentencepiece, protobuf, pyyaml
(upstream requirements.txt pins torch 2.4.0 / transformers 4.45.1).

  python3 -m venv /work/venvs/basis_sharing
  /work/venvs/basis_sharing/bin/pip install torch==2.4.0 transformers==4.45.1 \
      accelerate==0.34.2 datasets==2.19.1 sentencepiece protobuf pyyaml "numpy<2"
  /work/venvs/basis_sharing/bin/python tests/families/make_upstream_basis_sharing_fixture.py \
      [--upstream GIT_DIR]   # a clone or bare mirror holding the commit
"""
import argparse
import os
import sys

import upstream_fixture_util as util

COMMIT = "8fa941e03cdffe9ebfd0da8a74d2413132642454"


def main():
    tree = util.checkout(util.git_dir_arg("TUDa-HWAI+Basis_Sharing"), COMMIT, "basis_sharing")
    sys.path.insert(1, os.path.join(tree, "models"))  # models/gpt2.py imports `model_utils` unqualified
    import torch
    from transformers import DataCollatorForLanguageModeling
    import model_factory
    from config import ShareConfig

    work = os.path.dirname(tree)
    base = util.tiny_llama(os.path.join(work, "tiny-llama"), num_hidden_layers=3, num_key_value_heads=2)
    ShareConfig.name_map[base] = "tiny-llama"
    # (in, out) of each projection, upstream's table layout.
    ShareConfig.weight_info["tiny-llama"] = {
        "self_attn.q_proj": (64, 64), "self_attn.k_proj": (64, 32), "self_attn.v_proj": (64, 32),
        "self_attn.o_proj": (64, 64), "mlp.up_proj": (64, 172), "mlp.gate_proj": (64, 172),
        "mlp.down_proj": (172, 64),
    }

    def prepare_data(dataset_name, tokenizer, context_length, dataset_cache_dir=None):
        rows = [{"input_ids": r.tolist()} for r in util.calibration_ids(16, context_length)]
        return rows, None, None, DataCollatorForLanguageModeling(tokenizer, mlm=False, return_tensors="pt")

    model_factory.prepare_data = prepare_data

    saved = os.path.join(work, "share_tiny-llama_40")
    yaml_path = os.path.join(work, "share_tiny_llama_40.yaml")
    with open(yaml_path, "w") as f:  # upstream's tasks/configs layout, llama 7b settings scaled down
        f.write(f"""model_args:
  model_type: "llama2"
  model_name: "{base}"
  k_name: "self_attn.k_proj"
  q_name: "self_attn.q_proj"
  v_name: "self_attn.v_proj"
  o_name: "self_attn.o_proj"
  up_name: "mlp.up_proj"
  down_name: "mlp.down_proj"
  gate_name: "mlp.gate_proj"
  group_size: 2
  compression_ratio: 40
  context_length: 64
  stride: 64
  share_part: ["v", "k", "q", "up", "gate"]
  private_part: ["down", "o"]
calibration_args:
  dataset_name: "wikitext"
  build_calib: true
  calib_path: "{work}/calib/"
  dataset_cache_dir: null
  calibration_size: 16
  calib_batch_size: 4
model_saving:
  save_untrained_model: true
  untrained_model_path: "{saved}"
""")
    config = ShareConfig(argparse.Namespace(yaml_config_file=yaml_path, calibration_size=16,
                                            dataset_name="wikitext", dataset_cache_dir=None))
    torch.manual_seed(0)
    model = model_factory.create_model(config)
    logits = util.logits_of(model)

    # What a reader of the saved directory gets must be the same model.
    from models.llama import ShareLlamaForCausalLM
    reloaded = util.logits_of(ShareLlamaForCausalLM.from_pretrained(saved, device_map="cpu"))
    assert torch.equal(reloaded, logits), (reloaded - logits).abs().max()

    unique = {p.data_ptr(): p.numel() for p in model.parameters()}
    util.publish("basis_sharing", saved, logits, upstream_commit=COMMIT, unique_params=sum(unique.values()))


if __name__ == "__main__":
    main()
