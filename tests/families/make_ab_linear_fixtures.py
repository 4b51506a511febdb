#!/usr/bin/env python3
"""Tiny checkpoints in the exact on-disk forms of the two families that store a
factorized linear `<module>` as `<module>.BLinear` (in -> r, applied first) and
`<module>.ALinear` (r -> out, applied second, with the original bias), with
reference logits computed by PyTorch (float64) on the original module structure:

  asvd/           ASVD: save_pretrained safetensors, ASVDLlamaForCausalLM config with
                  truncation_ranks; fp16; q/k/v/o biases; factorized lm_head; head_dim
                  from config; one layer's MLP and one v_proj left dense.
  lowrank_arena/  LowRankArena export: model_type lowrank_llama, low_rank_modules,
                  low_rank_schema ABLinear; bf16 in two shards; tied embeddings;
                  one o_proj left dense.

The look-alike LLaMA modules come from make_lowrank_fixtures.py. Needs torch and
safetensors. Run from anywhere:
  python3 tests/families/make_ab_linear_fixtures.py
"""
import json
import os
import sys

import torch
from safetensors.torch import save, save_file
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_lowrank_fixtures as base  # noqa: E402  (needs the path above)


class ABLinear(nn.Module):
    """ASVD's ASVDLinear / LowRankArena's ABLinear: BLinear in -> r, then ALinear r -> out (+ bias)."""

    def __init__(self, in_features, out_features, rank, bias):
        super().__init__()
        self.BLinear = nn.Linear(in_features, rank, bias=False)
        self.ALinear = nn.Linear(rank, out_features, bias=bias)

    def forward(self, x):
        return self.ALinear(self.BLinear(x))


def low_rank_model(config, ranks, dtype):
    """A dense LLaMA whose listed linears are swapped for ABLinear, as both families' loaders do."""
    layers = [base.LlamaDecoderLayer(config, base.LlamaAttention(config),
                                     base.LlamaMLP(config.hidden_size, config.intermediate_size))
              for _ in range(config.num_hidden_layers)]
    model = base.LlamaForCausalLM(config, layers)
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    for name, rank in ranks.items():
        parent, _, attr = name.rpartition(".")
        old = model.get_submodule(name)
        new = ABLinear(old.in_features, old.out_features, rank, old.bias is not None)
        setattr(model.get_submodule(parent) if parent else model, attr, new)
    base.randomize(model)
    # Parameters only: RoPE's inv_freq buffer stays fp32, as transformers keeps it.
    for p in model.parameters():
        p.data = p.data.to(dtype)
    return model


def ranks_by_module(per_layer):
    """{full module name: rank} from one {short name: rank} dict per layer."""
    mlp = ("gate_proj", "up_proj", "down_proj")
    return {f"model.layers.{i}.{'mlp' if m in mlp else 'self_attn'}.{m}": r
            for i, layer in enumerate(per_layer) for m, r in layer.items()}


def state_dict(model):
    """What save_pretrained writes: each tensor once (a tied lm_head is dropped), contiguous."""
    state = model.state_dict()
    if model.config.tie_word_embeddings:
        del state["lm_head.weight"]
    return {k: v.contiguous() for k, v in state.items()}


def write_config(directory, config, **extra):
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(dict(config.__dict__, **extra), f, indent=2)


def make_asvd():
    out = os.path.join(base.OUT, "asvd")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(3)
    config = base.llama_config(head_dim=6, attention_bias=True, torch_dtype="float16",
                               architectures=["ASVDLlamaForCausalLM"], _name_or_path="hahnyuan/Llama-2-7b-hf-asvd90")
    # Sensitivity search: odd, unequal ranks per matrix and per layer; layer 2's MLP and layer 1's
    # v_proj stay dense; lm_head is compressed too.
    per_layer = [dict(q_proj=5, k_proj=3, v_proj=7, o_proj=9, gate_proj=7, up_proj=11, down_proj=5),
                 dict(q_proj=9, k_proj=5, o_proj=3, gate_proj=5, up_proj=3, down_proj=13),
                 dict(q_proj=3, k_proj=7, v_proj=5, o_proj=5)]
    ranks = dict(ranks_by_module(per_layer), lm_head=7)
    model = low_rank_model(config, ranks, torch.float16)
    write_config(out, config, model_type="llama", truncation_ranks=ranks, auto_map={
        "AutoConfig": "configuration_asvd_llama.ASVDLlamaConfig",
        "AutoModelForCausalLM": "modeling_asvd_llama.ASVDLlamaForCausalLM"})
    save_file(state_dict(model), os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    base.write_reference(out, base.reference_logits(model))


def make_lowrank_arena():
    out = os.path.join(base.OUT, "lowrank_arena")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(4)
    config = base.llama_config(num_hidden_layers=2, num_key_value_heads=1, tie_word_embeddings=True,
                               torch_dtype="bfloat16", architectures=["LowRankLlamaForCausalLM"])
    per_layer = [dict(q_proj=7, k_proj=3, v_proj=5, gate_proj=9, up_proj=5, down_proj=11),
                 dict(q_proj=3, k_proj=5, v_proj=3, o_proj=7, gate_proj=11, up_proj=9, down_proj=7)]
    ranks = ranks_by_module(per_layer)
    model = low_rank_model(config, ranks, torch.bfloat16)
    write_config(out, config, model_type="lowrank_llama", low_rank_modules={k: {"rank": r} for k, r in ranks.items()},
                 low_rank_schema="ABLinear", low_rank_method="svd_llm_v2")
    # Two shards and their index, as save_pretrained writes a large model.
    state = state_dict(model)
    first = [k for k in state if k.startswith("model.embed") or k.startswith("model.layers.0.")]
    shards = [first, [k for k in state if k not in first]]
    weight_map = {}
    for n, keys in enumerate(shards):
        name = f"model-{n + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: state[k] for k in keys}, os.path.join(out, name), metadata={"format": "pt"})
        weight_map.update({k: name for k in keys})
    total = sum(t.numel() * t.element_size() for t in state.values())
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    base.write_reference(out, base.reference_logits(model))
    return state


def write_fuzz_seeds(arena_state):
    """fuzz/lowrank_families.cpp, marker 2: config.json, a NUL, then model.safetensors of one directory."""
    corpus = os.path.join(base.ROOT, "fuzz", "corpus", "lowrank_families")
    os.makedirs(corpus, exist_ok=True)
    for seed, family, weights in (("asvd_dir", "asvd", None), ("lowrank_arena_dir", "lowrank_arena", arena_state)):
        directory = os.path.join(base.OUT, family)
        with open(os.path.join(directory, "config.json"), "rb") as f:
            config = f.read()
        if weights is None:
            with open(os.path.join(directory, "model.safetensors"), "rb") as f:
                data = f.read()
        else:
            data = save(weights, metadata={"format": "pt"})
        with open(os.path.join(corpus, seed), "wb") as f:
            f.write(b"\x02" + config + b"\x00" + data)


def main():
    make_asvd()
    write_fuzz_seeds(make_lowrank_arena())


if __name__ == "__main__":
    main()
