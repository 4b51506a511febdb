#!/usr/bin/env python3
"""Old against new in one device call: `flashsvd bench` with each binary in
turn, alternating for several rounds, so machine-to-machine differences
(up to ~2% on the H200s seen) cancel out of the comparison.

    python3 bench/ab.py --bin base=build-gpu/flashsvd_base --bin new=build/gpu-bundle/flashsvd \\
        --ratios 0.5,1.0 --prompts 512,8192 --gen 128 [--rounds 2] [--json OUT.json]

Prints one line per (model, ratio, prompt, binary): prefill and decode of every
round, their means, and the first greedy tokens (equal tokens show that a
change kept the numerics; the run is synthetic weights, see `flashsvd bench`).
"""
import argparse
import json
import statistics
import subprocess
import sys


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, metavar="NAME=PATH",
                    help="a flashsvd binary to compare (two or more)")
    ap.add_argument("--synthetic", default="llama-7b")
    ap.add_argument("--ratios", default="0.5,1.0")
    ap.add_argument("--prompts", default="512,8192")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--extra", default="", help="more flags for every `flashsvd bench` call")
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args()
    bins = []
    for spec in args.bin:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            ap.error(f"--bin {spec!r}: expected NAME=PATH")
        bins.append((name, path))
    if len(bins) < 2:
        ap.error("give at least two --bin")
    return args, bins


def bench(path, args, ratio):
    cmd = [path, "bench", "--synthetic", args.synthetic, "--ratio", ratio, "--prompt", args.prompts,
           "--gen", str(args.gen), "--device", "cuda", "--json"] + args.extra.split()
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return json.loads(run.stdout)


def main():
    args, bins = parse_args()
    rows = {}  # (ratio, prompt, name) -> list of bench rows
    for rnd in range(args.rounds):
        for name, path in bins:
            for ratio in args.ratios.split(","):
                for row in bench(path, args, ratio):
                    rows.setdefault((ratio, row["prompt"], name), []).append(row)
                print(f"round {rnd + 1}: {name} ratio {ratio} done", file=sys.stderr, flush=True)
    order = [name for name, _ in bins]
    for (ratio, prompt, name), runs in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1], order.index(kv[0][2]))):
        decode = [r["decode_ms_per_token"] for r in runs]
        prefill = [r["prefill_ms"] for r in runs]
        tokens = " ".join(str(t) for t in runs[0]["tokens"][:6])
        print(f"{args.synthetic} ratio {ratio} prompt {prompt:>5} {name:>8}: "
              f"decode {' '.join(f'{d:.4f}' for d in decode)} (mean {statistics.mean(decode):.4f}) ms/token, "
              f"prefill {' '.join(f'{p:.2f}' for p in prefill)} (mean {statistics.mean(prefill):.2f}) ms, "
              f"tokens {tokens}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"ratio": k[0], "prompt": k[1], "binary": k[2], "runs": v} for k, v in rows.items()], f,
                      indent=1)


if __name__ == "__main__":
    main()
