# The ablation table: one fixed setting, each decode mechanism on and off
# (graph none/layer/model x pack on/off x KV cache dense/lowrank), so each
# one's share is attributable; with kernels and launches per token.
#
#   python3 bench/ablation.py --flashsvd build/gpu-bundle/flashsvd --out $OUT
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
from run_suite import flashsvd_env  # noqa: E402  (the bundle's lib/ on the library path)


def main():
    p = argparse.ArgumentParser(description="flashsvd decode ablation: graphs x packing x KV cache")
    p.add_argument("--flashsvd", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--synthetic", default="llama-7b")
    p.add_argument("--ratio", default="0.5")
    p.add_argument("--prompt", default="512")
    p.add_argument("--gen", default="128")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for kv in ("dense", "lowrank"):
        for pack in ("on", "off"):
            cmd = [a.flashsvd, "bench", "--synthetic", a.synthetic, "--ratio", a.ratio, "--prompt", a.prompt,
                   "--gen", a.gen, "--modes", "model,layer,none", "--pack", pack, "--kv", kv, "--device", "cuda",
                   "--json"]
            print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
            out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True, env=flashsvd_env(a.flashsvd))
            rows += json.loads(out.stdout)
    with open(os.path.join(a.out, "ablation.json"), "w") as f:
        json.dump(rows, f, indent=2)
    best = min(r["decode_ms_per_token"] for r in rows)
    lines = ["| KV cache | packing | graph | decode ms/token | vs best | kernels / launches per token | capture ms |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kv']} | {r['pack']} | {r['graph']} | {r['decode_ms_per_token']:.3f} | "
                     f"{r['decode_ms_per_token'] / best:.2f}x | {r['kernels_per_token']} / {r['launches_per_token']} | "
                     f"{r['capture_ms']:.1f} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "ablation.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
