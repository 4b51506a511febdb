#!/usr/bin/env python3
"""Writes the tiny seed inputs of the format fuzzers (fuzz/corpus/{gguf,safetensors}/):
valid files that reach every value kind, tensor type and layout rule, for
libFuzzer to mutate. GGUF seeds come from ggml's own writer (the `gguf` package).

Usage: tests/formats/make_fuzz_seeds.py
"""
import json
import os
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGML_QUANT_SIZES, GGUFWriter

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
rng = np.random.default_rng(5)


def raw_blocks(qtype, n_elems):
    """Random bytes for one row of n_elems, shaped as the writer expects (rows, bytes per row)."""
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    return rng.integers(0, 256, size=(1, n_elems // block_elems * block_bytes), dtype=np.uint8)


def write_gguf(name, build, alignment=None):
    path = os.path.join(CORPUS, "gguf", name)
    writer = GGUFWriter(path, arch="llama")
    if alignment is not None:
        writer.data_alignment = alignment
        writer.add_uint32("general.alignment", alignment)
    build(writer)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def every_kind(w):
    w.add_string("general.name", "seed")
    w.add_uint8("u8", 7)
    w.add_int16("i16", -3)
    w.add_uint32("llama.block_count", 2)
    w.add_int64("i64", -5)
    w.add_float32("f32", 0.5)
    w.add_float64("f64", 1e-3)
    w.add_bool("flag", True)
    w.add_array("tokens", ["<s>", "a", "bc"])
    w.add_array("ids", [1, -2, 3])
    w.add_tensor("f32", rng.standard_normal((3, 5)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal(8).astype(np.float16))
    for qtype, n in [(T.BF16, 4), (T.Q8_0, 64), (T.Q4_0, 32), (T.Q4_1, 32), (T.Q4_K, 256), (T.Q5_K, 256),
                     (T.Q6_K, 256)]:
        w.add_tensor(qtype.name.lower(), raw_blocks(qtype, n), raw_dtype=qtype)


def aligned(w):
    w.add_tensor("a", np.arange(3, dtype=np.float32))
    w.add_tensor("b", raw_blocks(T.Q8_0, 32), raw_dtype=T.Q8_0)


def metadata_only(w):
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5])


def write_safetensors(name, tensors, metadata=None):
    header, data = {}, b""
    for tname, dtype, shape, raw in tensors:
        header[tname] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the reference writer pads the header to 8 bytes
    with open(os.path.join(CORPUS, "safetensors", name), "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + data)


def main():
    for sub in ("gguf", "safetensors"):
        os.makedirs(os.path.join(CORPUS, sub), exist_ok=True)
    write_gguf("every_kind.gguf", every_kind)
    write_gguf("aligned64.gguf", aligned, alignment=64)
    write_gguf("metadata_only.gguf", metadata_only)
    f = rng.standard_normal(15).astype(np.float32)
    write_safetensors("every_dtype.safetensors", [
        ("w", "F32", [3, 5], f.tobytes()),
        ("h", "F16", [2, 2], f[:4].astype(np.float16).tobytes()),
        ("b", "BF16", [3], (f[:3].view(np.uint32) >> 16).astype(np.uint16).tobytes()),
        ("d", "F64", [2], f[:2].astype(np.float64).tobytes()),
        ("scalar", "F32", [], f[:1].tobytes()),
        ("empty", "F16", [0, 3], b""),
        ("i", "I32", [2], np.array([1, -1], np.int32).tobytes()),
        ("m", "BOOL", [3], bytes([1, 0, 1])),
    ], metadata={"format": "pt"})
    write_safetensors("empty.safetensors", [])
    print("wrote seeds under", os.path.normpath(CORPUS))


if __name__ == "__main__":
    main()
