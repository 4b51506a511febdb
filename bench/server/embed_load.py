#!/usr/bin/env python3
"""Load test and benchmark of `flashsvd serve` with an encoder (standard library
only): C concurrent clients each send R POST /v1/embeddings requests of N texts
(consecutive lines of --texts, a different window per request). Every
embedding must match the one the same request got alone (computed first, one
request at a time): cosine >= --min-cosine (bf16 passes differ in the last bits
with the batch around them); no request may fail. Reports embeddings/s,
tokens/s (the server's usage) and request latency p50 / p99 as JSON on stdout,
measured after --warmup unmeasured rounds of the same load (a server's first
passes of each batch shape run eagerly before their graphs are captured).
Embeddings come base64-encoded, as the openai package asks for them
(--float-json: as JSON numbers, whose parsing in Python can bound the rate).

  python3 bench/server/embed_load.py --url http://127.0.0.1:8000 --texts sentences.txt \\
      --concurrency 32 --requests 8 --inputs 16
"""
import argparse
import array
import base64
import http.client
import json
import math
import statistics
import sys
import threading
import time
import urllib.parse


def embed(url, texts, b64):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    body = {"input": texts, "encoding_format": "base64" if b64 else "float"}
    conn.request("POST", "/v1/embeddings", body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {body[:300]!r}")
    out = json.loads(body)
    data = sorted(out["data"], key=lambda d: d["index"])
    if len(data) != len(texts):
        raise RuntimeError(f"{len(data)} embeddings for {len(texts)} inputs")
    if b64:
        return [array.array("f", base64.b64decode(d["embedding"])) for d in data], out["usage"]["prompt_tokens"]
    return [d["embedding"] for d in data], out["usage"]["prompt_tokens"]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--texts", required=True, help="one text a line")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--requests", type=int, default=8, help="requests per client")
    ap.add_argument("--inputs", type=int, default=16, help="texts per request")
    ap.add_argument("--windows", type=int, default=16, help="distinct requests (windows of --inputs lines)")
    ap.add_argument("--min-cosine", type=float, default=0.999)
    ap.add_argument("--float-json", action="store_true", help="embeddings as JSON numbers instead of base64")
    ap.add_argument("--warmup", type=int, default=1,
                    help="unmeasured rounds of the same load first (the server's first passes of each batch shape "
                         "run eagerly and capture graphs)")
    args = ap.parse_args()

    with open(args.texts, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    if len(lines) < args.inputs:
        sys.exit(f"{args.texts}: {len(lines)} texts, fewer than --inputs {args.inputs}")
    windows = [[lines[(w * args.inputs + i) % len(lines)] for i in range(args.inputs)] for w in range(args.windows)]
    twins = [embed(args.url, w, not args.float_json)[0] for w in windows]
    print(f"{len(twins)} requests computed alone", file=sys.stderr)

    results, errors, lock = [], [], threading.Lock()

    def client(c):
        for k in range(args.requests):
            w = (c * args.requests + k) % len(windows)
            try:
                start = time.perf_counter()
                got, tokens = embed(args.url, windows[w], not args.float_json)
                latency = time.perf_counter() - start
                worst = min(cosine(a, b) for a, b in zip(got, twins[w]))
                with lock:
                    results.append((latency, tokens, worst))
            except Exception as e:  # reported, and the run fails
                with lock:
                    errors.append(repr(e))

    def load():
        threads = [threading.Thread(target=client, args=(c,)) for c in range(args.concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    for _ in range(args.warmup):
        load()
    if errors:
        sys.exit(f"warm-up failed: {errors[:3]}")
    results.clear()
    start = time.perf_counter()
    load()
    wall = time.perf_counter() - start

    latencies = [r[0] for r in results]
    pct = lambda xs, q: statistics.quantiles(xs, n=100)[q - 1] if len(xs) >= 2 else (xs[0] if xs else None)
    worst = min((r[2] for r in results), default=None)
    below = sum(r[2] < args.min_cosine for r in results)
    report = {
        "concurrency": args.concurrency, "warmup_rounds": args.warmup, "encoding": "float" if args.float_json else "base64", "requests": len(results) + len(errors), "inputs_per_request": args.inputs,
        "errors": errors[:5], "error_count": len(errors), "wall_s": wall,
        "embeddings_per_s": len(results) * args.inputs / wall, "tokens_per_s": sum(r[1] for r in results) / wall,
        "requests_per_s": len(results) / wall, "latency_p50_s": pct(latencies, 50), "latency_p99_s": pct(latencies, 99),
        "min_cosine_to_alone": worst, "requests_below_min_cosine": below,
    }
    print(json.dumps(report, indent=2))
    sys.exit(1 if errors or below else 0)


if __name__ == "__main__":
    main()
