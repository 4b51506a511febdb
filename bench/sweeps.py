# The paper's Figures 4 and 5 for flashsvd alone: decode speed over the kept
# ratio (0.4-0.8 and dense, prompt 512) and over the generation length
# (64-16384 tokens after a 512-token prompt), from `flashsvd bench --json`.
# Writes sweeps.json; `--plot` turns a sweeps.json into PNGs (matplotlib; run
# it wherever that is installed).
#
#   python3 bench/sweeps.py --flashsvd build/gpu-bundle/flashsvd --out $OUT          # on the GPU machine
#   python3 bench/sweeps.py --plot $OUT/sweeps.json --out docs/plots                 # anywhere
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))


def bench(flashsvd, env, synthetic, ratio, prompt, gen):
    cmd = [flashsvd, "bench", "--synthetic", synthetic, "--ratio", str(ratio), "--prompt", str(prompt),
           "--gen", str(gen), "--device", "cuda", "--json"]
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    return json.loads(subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True, env=env).stdout)[0]


def measure(a):
    from run_suite import flashsvd_env  # the bundle's lib/ on the library path
    env = flashsvd_env(a.flashsvd)
    ratios = [float(r) for r in a.ratios.split(",")]
    gens = [int(g) for g in a.gens.split(",")]
    data = {"synthetic": a.synthetic, "ratio_sweep": [], "gen_sweep": []}
    for r in ratios:
        data["ratio_sweep"].append(bench(a.flashsvd, env, a.synthetic, r, 512, 128))
    for g in gens:
        data["gen_sweep"].append(bench(a.flashsvd, env, a.synthetic, a.gen_ratio, 512, g))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "sweeps.json"), "w") as f:
        json.dump(data, f, indent=1)
    for row in data["ratio_sweep"] + data["gen_sweep"]:
        print(f"ratio {row['ratio']:<4g} gen {row['gen']:<6d} decode {row['decode_ms_per_token']:.3f} ms/token "
              f"end to end {row['end_to_end_s']:.2f} s")


def plot(path, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(path) as f:
        data = json.load(f)
    os.makedirs(out, exist_ok=True)
    rs = data["ratio_sweep"]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([r["ratio"] for r in rs], [r["decode_tokens_per_s"] for r in rs], "o-")
    ax.set(xlabel="kept parameter ratio (1.0: dense)", ylabel="decode tokens/s",
           title=f"{data['synthetic']}, prompt 512, 128 tokens")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "ratio_sweep.png"), dpi=120)
    gs = data["gen_sweep"]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([g["gen"] for g in gs], [g["decode_ms_per_token"] for g in gs], "o-")
    ax.set(xscale="log", xlabel="generated tokens (after a 512-token prompt)", ylabel="decode ms/token",
           title=f"{data['synthetic']}, keep {gs[0]['ratio']:g}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gen_sweep.png"), dpi=120)
    print(f"wrote {out}/ratio_sweep.png, {out}/gen_sweep.png")


def main():
    p = argparse.ArgumentParser(description="flashsvd keep-ratio and generation-length sweeps")
    p.add_argument("--flashsvd", help="the flashsvd binary (measures)")
    p.add_argument("--plot", help="a sweeps.json to plot instead of measuring")
    p.add_argument("--out", required=True)
    p.add_argument("--synthetic", default="llama-7b")
    p.add_argument("--ratios", default="0.4,0.5,0.6,0.7,0.8,1.0")
    p.add_argument("--gens", default="64,256,1024,4096,16384")
    p.add_argument("--gen-ratio", type=float, default=0.5, help="kept ratio of the generation-length sweep")
    a = p.parse_args()
    if a.plot:
        plot(a.plot, a.out)
    elif a.flashsvd:
        measure(a)
    else:
        p.error("give --flashsvd (measure) or --plot (draw)")


if __name__ == "__main__":
    main()
