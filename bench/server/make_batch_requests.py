#!/usr/bin/env python3
"""Writes N greedy `flashsvd batch` requests (JSONL) of mixed prompt and
output lengths: passages of the repository's own docs (5-300 words, as a raw
prompt or as a chat message asking to continue it), max_tokens 16-128, all
from one seed, so the device needs no data beside the checkout. The requests
follow the docs: keep the requests file beside the results it produced, and
compare runs only on one requests file.

  python3 bench/server/make_batch_requests.py -n 1000 > requests.jsonl
"""
import argparse
import glob
import json
import os
import random
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=1000)
    p.add_argument("--seed", type=int, default=19)
    a = p.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    words = []
    for path in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        with open(path, encoding="utf-8") as f:
            words += f.read().split()
    rng = random.Random(a.seed)
    for i in range(a.n):
        length = rng.randint(5, 300)
        start = rng.randrange(len(words) - length)
        text = " ".join(words[start:start + length])
        req = {"id": f"r{i}", "max_tokens": rng.randint(16, 128), "temperature": 0}
        if rng.random() < 0.5:
            req["prompt"] = text
        else:
            req["messages"] = [{"role": "user", "content": "Continue this text:\n" + text}]
        sys.stdout.write(json.dumps(req) + "\n")


if __name__ == "__main__":
    main()
