#!/usr/bin/env python3
"""Converts a llama2.c v0 checkpoint into a Hugging Face LLaMA directory the
way llama2.c's export.py hf_export does: q/k rows permuted from Meta's
interleaved RoPE order into Hugging Face's rotate_half order (its
permute_original), safetensors weights, a LlamaConfig-style config.json.

Independent of the C++ loaders, so tests can check that loading the .bin
(which un-permutes q/k itself) and loading this directory agree exactly.

usage: make_hf_fixture.py MODEL.bin OUT_DIR [--shards N]
needs: numpy, safetensors
"""
import argparse
import json
import os
import struct

import numpy as np
from safetensors.numpy import save_file


def read_llama2c_v0(path):
    raw = open(path, "rb").read()
    dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len = struct.unpack("7i", raw[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    head = dim // n_heads
    kv_dim = head * n_kv_heads
    data = np.frombuffer(raw, dtype="<f4", offset=28)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        out = data[pos:pos + n].reshape(shape)
        pos += n
        return out

    w = {"dim": dim, "hidden": hidden, "n_layers": n_layers, "n_heads": n_heads,
         "n_kv_heads": n_kv_heads, "vocab": vocab, "seq_len": seq_len, "shared": shared}
    w["tok_embeddings"] = take(vocab, dim)
    w["attention_norm"] = take(n_layers, dim)
    w["wq"] = take(n_layers, dim, dim)
    w["wk"] = take(n_layers, kv_dim, dim)
    w["wv"] = take(n_layers, kv_dim, dim)
    w["wo"] = take(n_layers, dim, dim)
    w["ffn_norm"] = take(n_layers, dim)
    w["w1"] = take(n_layers, hidden, dim)
    w["w2"] = take(n_layers, dim, hidden)
    w["w3"] = take(n_layers, hidden, dim)
    w["norm"] = take(dim)
    take(seq_len, head // 2)  # freq_cis_real
    take(seq_len, head // 2)  # freq_cis_imag
    w["output"] = w["tok_embeddings"] if shared else take(vocab, dim)
    assert pos == data.size, "trailing bytes: not a llama2.c v0 file"
    return w


def permute_original(w, n_heads, dim1, dim2):
    # export.py: w.view(dim1, dim2).reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2)
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--shards", type=int, default=1)
    args = ap.parse_args()
    w = read_llama2c_v0(args.model)
    dim, kv_dim = w["dim"], w["wk"].shape[1]
    sd = {"model.embed_tokens.weight": w["tok_embeddings"], "model.norm.weight": w["norm"]}
    for i in range(w["n_layers"]):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = w["attention_norm"][i]
        sd[p + "self_attn.q_proj.weight"] = permute_original(w["wq"][i], w["n_heads"], dim, dim)
        sd[p + "self_attn.k_proj.weight"] = permute_original(w["wk"][i], w["n_kv_heads"], kv_dim, dim)
        sd[p + "self_attn.v_proj.weight"] = w["wv"][i]
        sd[p + "self_attn.o_proj.weight"] = w["wo"][i]
        sd[p + "post_attention_layernorm.weight"] = w["ffn_norm"][i]
        sd[p + "mlp.gate_proj.weight"] = w["w1"][i]
        sd[p + "mlp.down_proj.weight"] = w["w2"][i]
        sd[p + "mlp.up_proj.weight"] = w["w3"][i]
    if not w["shared"]:
        sd["lm_head.weight"] = w["output"]
    sd = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in sd.items()}

    os.makedirs(args.out, exist_ok=True)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": dim, "intermediate_size": w["hidden"],
        "num_hidden_layers": w["n_layers"], "num_attention_heads": w["n_heads"],
        "num_key_value_heads": w["n_kv_heads"], "vocab_size": w["vocab"],
        "max_position_embeddings": w["seq_len"], "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
        "hidden_act": "silu", "tie_word_embeddings": w["shared"], "torch_dtype": "float32",
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    if args.shards == 1:
        save_file(sd, os.path.join(args.out, "model.safetensors"))
        return
    names = list(sd)
    weight_map = {}
    for s in range(args.shards):
        shard = f"model-{s + 1:05d}-of-{args.shards:05d}.safetensors"
        part = names[s::args.shards]
        save_file({k: sd[k] for k in part}, os.path.join(args.out, shard))
        weight_map.update({k: shard for k in part})
    with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)


if __name__ == "__main__":
    main()
