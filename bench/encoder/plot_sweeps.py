# The paper's Figures 9 and 10 for the encoder: latency over the sequence
# length and over the batch size, flashsvd against HF, from the JSON that
# `flashsvd bench --synthetic bert-base --batch ... --seq ... --json` and
# `bench/peers/encoder_hf.py ... --json` write (matplotlib; run it wherever
# that is installed):
#
#   python3 bench/encoder/plot_sweeps.py --flashsvd fsvd_0.5_sweep.json fsvd_1_sweep.json \
#       --hf hf_sweep.json --out docs/plots
#
# Writes encoder_seq_sweep.png (one panel per batch size) and
# encoder_batch_sweep.png (one panel per sequence length).
import argparse
import json
import os


def load_rows(flashsvd_files, hf_files):
    """(label, seq, batch, latency_ms) for every measured point."""
    rows = []
    for path in flashsvd_files:
        with open(path) as f:
            for r in json.load(f):
                rows.append((f"flashsvd {keep_name(r['ratio'])}", r["seq"], r["batch"], r["latency_ms"]))
    for path in hf_files:
        with open(path) as f:
            for r in json.load(f):
                if not r.get("varlen", False) and "latency_ms" in r:
                    peer = r["peer"].replace("hf_", "HF ").replace("_", " ")
                    rows.append((f"{peer} {keep_name(r['keep'])}", r["seq"], r["batch"], r["latency_ms"]))
    if not rows:
        raise SystemExit("no measured rows in the given files")
    return rows


def keep_name(ratio):
    return "dense" if ratio >= 1.0 else f"keep {ratio:g}"


def draw(rows, along, fixed, out_path, title):
    """One panel per value of `fixed` ("seq" or "batch"), latency over `along`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, NullFormatter
    index = {"seq": 1, "batch": 2}
    panels = sorted({r[index[fixed]] for r in rows})
    labels = sorted({r[0] for r in rows}, key=lambda s: (not s.startswith("flashsvd"), s))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.2), squeeze=False)
    for ax, value in zip(axes[0], panels):
        for label in labels:
            pts = sorted((r[index[along]], r[3]) for r in rows if r[0] == label and r[index[fixed]] == value)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-" if label.startswith("flashsvd") else "s--",
                        label=label)
        ax.set(xscale="log", yscale="log", xlabel="sequence length" if along == "seq" else "batch size",
               title=f"{fixed} {value}")
        ax.set_xticks(sorted({r[index[along]] for r in rows}))
        for axis in (ax.xaxis, ax.yaxis):  # plain numbers on the log axes
            axis.set_major_formatter(FormatStrFormatter("%g"))
            axis.set_minor_formatter(NullFormatter())
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("latency ms")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    print(f"wrote {out_path}")


def main():
    p = argparse.ArgumentParser(description="plot the encoder sweeps (the paper's Figures 9 and 10)")
    p.add_argument("--flashsvd", nargs="+", required=True, help="flashsvd bench --json outputs")
    p.add_argument("--hf", nargs="*", default=[], help="encoder_hf.py --json outputs")
    p.add_argument("--out", required=True, help="folder for the PNGs")
    p.add_argument("--model", default="BERT-base shapes, bf16, H200")
    a = p.parse_args()
    rows = load_rows(a.flashsvd, a.hf)
    os.makedirs(a.out, exist_ok=True)
    draw(rows, "seq", "batch", os.path.join(a.out, "encoder_seq_sweep.png"), f"{a.model}: latency over length")
    draw(rows, "batch", "seq", os.path.join(a.out, "encoder_batch_sweep.png"), f"{a.model}: latency over batch")


if __name__ == "__main__":
    main()
