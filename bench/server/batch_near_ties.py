#!/usr/bin/env python3
"""Where `flashsvd batch` run batched and one by one (--max-batch 1) give a
request different greedy tokens, is it a bf16 near-tie? The rule of
bench/peers/run_suite.py: at the first token where the two runs part, the
fp32 logits (`flashsvd logits --last --precision fp32`, on the same prompt and
the tokens both runs agree on) of the two candidate tokens differ by less
than NEAR_TIE_ERRORS times the bf16 logits' RMS error there. Prints one line
a differing request and a summary; --json writes them all.

  python3 bench/server/batch_near_ties.py --flashsvd build/flashsvd -m MODEL \\
      --batched out_b64.jsonl --alone out_b1.jsonl --device cuda [--jobs 8] [--json near_ties.json]

Needs the results' "prompt_token_ids" and "token_ids" (flashsvd batch writes
them) and numpy.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

NEAR_TIE_ERRORS = 3


def read_results(path):
    with open(path) as f:
        return {r["index"]: r for r in map(json.loads, f) if "error" not in r}


def match_length(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def last_logits(a, tokens, precision, npy):
    import numpy
    subprocess.run([a.flashsvd, "logits", "--model", a.model, "--tokens", ",".join(map(str, tokens)), "--last",
                    "--device", a.device, "--precision", precision, "-o", npy],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return numpy.load(npy)[0].astype(numpy.float64)


def divergence(a, batched, alone, work):
    import numpy
    k = match_length(batched["token_ids"], alone["token_ids"])
    if k >= min(len(batched["token_ids"]), len(alone["token_ids"])):
        return {"index": batched["index"], "near_tie": False, "prefix": True}  # a stop, not a different token
    npy = os.path.join(work, f"logits{batched['index']}.npy")
    seq = batched["prompt_token_ids"] + batched["token_ids"][:k]
    fp32 = last_logits(a, seq, "fp32", npy)
    bf16 = last_logits(a, seq, "bf16", npy)
    rms = numpy.sqrt(numpy.mean(fp32 ** 2))
    tb, ta = batched["token_ids"][k], alone["token_ids"][k]
    gap = float((fp32[tb] - fp32[ta]) / rms)
    error = float(numpy.sqrt(numpy.mean((bf16 - fp32) ** 2)) / rms)
    return {"index": batched["index"], "at": k, "batched_token": tb, "alone_token": ta, "fp32_gap_over_rms": gap,
            "bf16_error_over_rms": error, "near_tie": abs(gap) < NEAR_TIE_ERRORS * error}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--flashsvd", required=True)
    p.add_argument("-m", "--model", required=True)
    p.add_argument("--batched", required=True, help="results of the batched run (JSONL)")
    p.add_argument("--alone", required=True, help="results of the one-by-one run (JSONL)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--jobs", type=int, default=1, help="requests checked at once (one flashsvd process each)")
    p.add_argument("--json", help="write every differing request's verdict here")
    a = p.parse_args()
    batched, alone = read_results(a.batched), read_results(a.alone)
    common = sorted(set(batched) & set(alone))
    differing = [i for i in common if batched[i]["token_ids"] != alone[i]["token_ids"]]
    verdicts = []
    with tempfile.TemporaryDirectory() as work, concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
        futures = [pool.submit(divergence, a, batched[i], alone[i], work) for i in differing]
        for n, (i, future) in enumerate(zip(differing, futures)):
            d = future.result()
            if d.get("prefix"):
                print(f"request {i}: one run's tokens are a prefix of the other's", flush=True)
            else:
                print(f"request {i}: parts at token {d['at']} ({d['batched_token']} vs {d['alone_token']}), fp32 gap "
                      f"{d['fp32_gap_over_rms']:.4f}, bf16 error {d['bf16_error_over_rms']:.4f}: "
                      f"{'near-tie' if d['near_tie'] else 'NOT a near-tie'}", flush=True)
            verdicts.append(d)
            print(f"[{n + 1}/{len(differing)}]", file=sys.stderr, flush=True)
    ties = sum(d["near_tie"] for d in verdicts)
    print(f"{len(common)} requests in both runs, {len(common) - len(differing)} identical, {len(differing)} differ: "
          f"{ties} at a bf16 near-tie, {len(differing) - ties} not")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"requests": len(common), "differing": verdicts}, f, indent=1)
    return 0 if ties == len(differing) else 1


if __name__ == "__main__":
    sys.exit(main())
