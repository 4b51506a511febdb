#!/usr/bin/env python3
"""Load test and benchmark of a running `flashsvd serve` (standard library only,
so it runs on machines without pip): C concurrent clients each stream R
completions; every streamed text must equal the non-streamed greedy answer
to the same prompt (computed first, one request at a time), and no request
may fail. Reports requests/s, generated tokens/s, time to first token and
inter-chunk latency (p50 / p99) as JSON on stdout.

  python3 bench/server/load.py --url http://127.0.0.1:8000 --concurrency 64 --requests 3 \\
      --prompt-tokens 512 --max-tokens 128 [--vocab 32000]

Prompts are token ids (drawn from a fixed seed over [--first-id, --vocab)), so
any tokenizer works and each prompt has exactly --prompt-tokens tokens.
"""
import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time
import urllib.parse


def request(url, body, stream):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    extra = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
    conn.request("POST", "/v1/completions", body=json.dumps({**body, **extra}),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    if not stream:
        out = json.loads(r.read())
        conn.close()
        return out["choices"][0]["text"], out["usage"]["completion_tokens"], []
    start, times, text, done, tokens = time.perf_counter(), [], [], False, None
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if data == b"[DONE]":
            done = True
            break
        chunk = json.loads(data)
        if "error" in chunk:
            raise RuntimeError(f"stream error: {chunk['error']}")
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        if not chunk["choices"]:
            continue
        piece = chunk["choices"][0]["text"]
        if piece:
            times.append(time.perf_counter() - start)
            text.append(piece)
    conn.close()
    if not done:
        raise RuntimeError("stream ended without [DONE]")
    return "".join(text), tokens, times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=3, help="streamed requests per client")
    ap.add_argument("--prompts", type=int, default=8, help="distinct prompts")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--first-id", type=int, default=3, help="lowest id drawn (skips BOS/EOS/UNK)")
    args = ap.parse_args()

    rng = random.Random(1)
    prompts = [[rng.randrange(args.first_id, args.vocab) for _ in range(args.prompt_tokens)]
               for _ in range(args.prompts)]
    base = {"max_tokens": args.max_tokens, "temperature": 0, "ignore_eos": True}
    twins = []
    for i, p in enumerate(prompts):
        text, tokens, _ = request(args.url, {**base, "prompt": p}, False)
        twins.append(text)
        print(f"twin {i}: {tokens} tokens", file=sys.stderr)

    results, errors, lock = [], [], threading.Lock()

    def client(c):
        for k in range(args.requests):
            i = (c + k) % len(prompts)
            try:
                text, tokens, times = request(args.url, {**base, "prompt": prompts[i]}, True)
                if tokens != args.max_tokens:
                    raise RuntimeError(f"stream reported {tokens} tokens, asked for {args.max_tokens}")
                with lock:
                    results.append((i, text == twins[i], times))
            except Exception as e:  # reported, and the run fails
                with lock:
                    errors.append(repr(e))

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start

    ttft = [r[2][0] for r in results if r[2]]
    gaps = [b - a for r in results for a, b in zip(r[2], r[2][1:])]
    pct = lambda xs, q: statistics.quantiles(xs, n=100)[q - 1] if len(xs) >= 2 else (xs[0] if xs else None)
    mismatched = [r[0] for r in results if not r[1]]
    report = {
        "concurrency": args.concurrency, "requests": len(results) + len(errors), "errors": errors[:5],
        "error_count": len(errors), "mismatched_prompts": sorted(set(mismatched)), "mismatch_count": len(mismatched),
        "prompt_tokens": args.prompt_tokens, "max_tokens": args.max_tokens, "wall_s": wall,
        "requests_per_s": len(results) / wall, "generated_tokens_per_s": len(results) * args.max_tokens / wall,
        "ttft_p50_s": pct(ttft, 50), "ttft_p99_s": pct(ttft, 99),
        "inter_chunk_p50_s": pct(gaps, 50), "inter_chunk_p99_s": pct(gaps, 99),
    }
    print(json.dumps(report, indent=2))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
