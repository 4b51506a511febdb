#!/usr/bin/env python3
"""sentence-transformers' embedding throughput on the GPU, the peer of
`flashsvd serve`'s /v1/embeddings (bench/server/embed_load.py): encodes every
line of --texts with model.encode at each batch size, fp32 and bf16, best of
--repeats after a warm-up; JSON on stdout.

  python3 bench/encoder/st_throughput.py --model MINILM_DIR --texts sentences.txt --batch 32,128
"""
import argparse
import json
import time

import torch
from sentence_transformers import SentenceTransformer


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--batch", default="32,128")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with open(args.texts, encoding="utf-8") as f:
        texts = [line.strip() for line in f if line.strip()]
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        model = SentenceTransformer(args.model, device="cuda").to(dtype)
        for batch in (int(b) for b in args.batch.split(",")):
            model.encode(texts[:batch], batch_size=batch)
            best = float("inf")
            for _ in range(args.repeats):
                torch.cuda.synchronize()
                start = time.perf_counter()
                model.encode(texts, batch_size=batch, convert_to_numpy=True)
                torch.cuda.synchronize()
                best = min(best, time.perf_counter() - start)
            rows.append({"dtype": str(dtype).removeprefix("torch."), "batch": batch, "texts": len(texts),
                         "seconds": best, "embeddings_per_s": len(texts) / best})
    print(json.dumps({"peer": "sentence-transformers", "torch": torch.__version__, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
