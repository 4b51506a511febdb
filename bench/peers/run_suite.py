# The peer comparison in one command, for a fresh GPU machine: exports the
# synthetic models (`flashsvd convert --synthetic`, bf16-exact weights), runs
# `flashsvd bench` and every peer (harness.py) on each prompt/gen setting,
# checks that each peer's greedy tokens are flashsvd's (where one parts early,
# flashsvd's own logits there tell a bf16 near-tie, and the peer's logits
# against flashsvd's fp32 ones how precise the peer is there), and writes
# results.json and table.md into --out after every step (a run cut short keeps
# what it finished). Settings run in the order given, each for every model, so
# --budget-s (or splitting --settings over several calls) keeps the first ones:
# a step starts only if one as long as the longest so far would end within it.
#
#   python3 bench/peers/run_suite.py --flashsvd build-peers/gpu-bundle/flashsvd --out $OUT --quick
#   python3 bench/peers/run_suite.py --flashsvd ... --out ... --settings 2048/128,4096/128 --budget-s 500
#
# Many sequences per step (--batch): `flashsvd bench --batch` (sequence b's
# prompt is the prompt + b tokens, each sequence at its own position) against
# every peer decoding B copies of the prompt at one shared position (their
# best case); table.md has aggregate decode tokens/s per model and B, with
# flashsvd's over the fastest peer's, and checks each peer's sequence-0 tokens
# against flashsvd's sequence 0 (the only pair with equal prompts). On the GPU
# machine, one call per model (gpt-fast and HF compile afresh for every B;
# the time a call takes is unmeasured: if one runs past a device call's
# limit, split --batch over two calls):
#   python3 bench/peers/run_suite.py --flashsvd build/gpu-bundle/flashsvd --work /dev/shm/flashsvd-peers \
#       --hf-compile --ratios 0.5 --settings 512/32 --batch 1,8,32,64 --out $OUT/batch-0.5
#   python3 bench/peers/run_suite.py --flashsvd build/gpu-bundle/flashsvd --work /dev/shm/flashsvd-peers \
#       --hf-compile --ratios 1.0 --settings 512/32 --batch 1,8,32,64 --out $OUT/batch-1.0
# A CPU smoke test of the same path (tiny model, fp32; gpt-fast's compilation
# takes minutes per B there):
#   python3 bench/peers/run_suite.py --flashsvd build/flashsvd --synthetic smollm2-135m --device cpu \
#       --dtype fp32 --ratios 0.5 --settings 16/6 --batch 1,2,4 --out /tmp/peers-smoke
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (bench/peers on the path first)

PEER_NAMES = {"hf_static": "HF static", "dense_kv": "Dense KV", "gpt_fast": "gpt-fast"}
MUST_MATCH = 8  # greedy tokens that must agree; later ones may part at bf16 near-ties
# A peer parting earlier is judged in an fp32 reference (flashsvd's fp32
# executor on the same bf16-exact weights): it is excused when the two tokens'
# fp32 logits differ by less than this many times flashsvd's own bf16 logit
# error at that step (both over the fp32 logits' RMS), i.e. when a correct
# bf16 engine could pick either.
NEAR_TIE_ERRORS = 3


def arguments():
    p = argparse.ArgumentParser(description="flashsvd bench against its peers on synthetic models")
    p.add_argument("--flashsvd", required=True, help="the flashsvd binary (a gpu-bundle's, with lib/ beside it)")
    p.add_argument("--out", required=True, help="folder for results.json, table.md and the logs")
    p.add_argument("--synthetic", default="llama-7b")
    p.add_argument("--ratios", default="0.5,1.0", help="kept parameter ratios (1.0: dense)")
    p.add_argument("--rank-spread", type=float, default=0.0,
                   help="unequal ranks across layers and matrices (flashsvd's --rank-spread; 0: uniform)")
    p.add_argument("--hf-compile", action="store_true",
                   help="hf_static with generate()'s automatic compilation instead of eager")
    p.add_argument("--settings", default="512/32,2048/128,4096/128,8192/128", help="prompt/gen pairs")
    p.add_argument("--quick", action="store_true", help="only 512/32")
    p.add_argument("--peers", default=",".join(harness.PEERS))
    p.add_argument("--batch", help="batch sizes, comma-separated: instead of single-sequence decode, decode "
                   "B sequences per step (flashsvd bench --batch, harness.py --batch) and table tokens/s per B")
    p.add_argument("--work", default="/tmp/flashsvd-peers", help="where the exported models go")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp32"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=1e9,
                   help="start no step that, as long as the longest so far, would end after this many seconds")
    return p.parse_args()


def run(cmd, log, env=None):
    """Runs cmd, its stderr appended to `log`; returns stdout."""
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    with open(log, "a") as err:
        err.write("+ " + " ".join(cmd) + "\n")
        err.flush()
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, check=True, env=env).stdout


def flashsvd_env(binary):
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.abspath(binary)), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = ":".join(filter(None, [lib, "/usr/local/cuda/lib64", env.get("LD_LIBRARY_PATH")]))
    return env


def match_length(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def divergence(a, env, model_dir, prompt, fs_tokens, peer, peer_tokens, log):
    """Where a peer's greedy tokens first part from flashsvd's: the logit of
    flashsvd's token there minus that of the peer's, over the logits' RMS, in
    flashsvd's bf16 logits, in an fp32 reference (`flashsvd logits --last`
    on the same weights, prompt and tokens) and in the peer's own logits
    (harness.py --logits-for), and the bf16 and the peer's logits' errors."""
    k = match_length(fs_tokens, peer_tokens)
    if k >= min(len(fs_tokens), len(peer_tokens)):
        return None
    import numpy
    with open(os.path.join(model_dir, "flashsvd.json")) as f:
        vocab = json.load(f)["config"]["vocab"]
    seq = harness.prompt_tokens(prompt, vocab) + list(fs_tokens[:k])
    npy = os.path.join(a.work, "divergence.npy")
    rows = {}
    for precision in ("bf16", "fp32"):
        run([a.flashsvd, "logits", "--model", model_dir, "--tokens", ",".join(map(str, seq)), "--last",
             "--device", a.device, "--precision", precision, "-o", npy], log, env)
        rows[precision] = numpy.load(npy)[0].astype(numpy.float64)
    run([sys.executable, os.path.join(HERE, "harness.py"), "--model", model_dir, "--peers", peer, "--device", a.device,
         "--dtype", a.dtype, "--logits-for", ",".join(map(str, seq)), "--logits-out", npy], log)
    rows["peer"] = numpy.load(npy)[0].astype(numpy.float64)
    ref = rows["fp32"]
    rms = numpy.sqrt(numpy.mean(ref ** 2))
    gap = {p: float((row[fs_tokens[k]] - row[peer_tokens[k]]) / rms) for p, row in rows.items()}
    error = {p: float(numpy.sqrt(numpy.mean((rows[p] - ref) ** 2)) / rms) for p in ("bf16", "peer")}
    return {"at": k, "flashsvd_token": fs_tokens[k], "peer_token": peer_tokens[k], "gap_over_rms": gap["bf16"],
            "fp32_gap_over_rms": gap["fp32"], "bf16_error_over_rms": error["bf16"],
            "peer_gap_over_rms": gap["peer"], "peer_error_over_rms": error["peer"],
            "near_tie": abs(gap["fp32"]) < NEAR_TIE_ERRORS * error["bf16"]}


def model_label(synthetic, ratio, spread=0.0):
    label = f"{synthetic} {'dense' if ratio >= 1 else f'keep {ratio:g}'}"
    return label + (f" spread {spread:g}" if spread and ratio < 1 else "")


def fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def setting_cells(r):
    """A result's model and setting, and its batch size in a --batch run."""
    return [r["model"], f"{r['prompt']}/{r['gen']}"] + ([str(r["batch"])] if "batch" in r else [])


def speed_table(results, peers):
    """Decode and prefill of flashsvd and each peer, with flashsvd's speedup (peer time / ours)."""
    lines = []
    for metric, title in (("decode_ms_per_token", "Decode ms/token"), ("prefill_ms", "Prefill ms")):
        head = f"| model | prompt/gen | flashsvd |" + "".join(f" {PEER_NAMES[p]} | × |" for p in peers)
        lines += [f"**{title}** (×: flashsvd speedup = peer / flashsvd)", "", head,
                  "|" + "---|" * (3 + 2 * len(peers))]
        for r in results:
            ours = r["flashsvd"][metric] if r.get("flashsvd") else None
            cells = setting_cells(r) + [fmt(ours, 3 if "decode" in metric else 2)]
            for p in peers:
                theirs = r["peers"].get(p, {}).get(metric)
                cells += [fmt(theirs, 3 if "decode" in metric else 2),
                          f"{theirs / ours:.2f}x" if theirs and ours else "–"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def batch_table(results, peers):
    """Aggregate decode tokens/s at each batch size, and flashsvd's over the fastest peer's."""
    lines = ["**Decode tokens/s, B sequences per step** (flashsvd bench --batch: sequence b's prompt is the "
             "prompt + b tokens, every sequence at its own position; peers: B copies of the prompt, all at one "
             "position, their best case; ×: flashsvd / the fastest peer on the same model)", "",
             "| model | prompt/gen | B | flashsvd |" + "".join(f" {PEER_NAMES[p]} |" for p in peers) + " × |",
             "|" + "---|" * (5 + len(peers))]
    for r in results:
        ours = r["flashsvd"]["decode_tokens_per_s"]
        theirs = [r["peers"].get(p, {}).get("decode_tokens_per_s") for p in peers]
        best = max(filter(None, theirs), default=None)
        cells = setting_cells(r) + [fmt(ours, 0)] + [fmt(t, 0) for t in theirs]
        cells.append(f"{ours / best:.2f}x" if best else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def table(results, peers, batched=False):
    """Markdown: the speed table (batch_table in a --batch run), then the greedy tokens' check."""
    lines = batch_table(results, peers) if batched else speed_table(results, peers)
    lines += ["**Greedy tokens** (leading tokens equal to flashsvd's, of 16; ✓: at least "
              f"{MUST_MATCH}; ≈: fewer, but where it parts the two tokens' fp32 logits differ by less than "
              f"{NEAR_TIE_ERRORS}x flashsvd's bf16 logit error, a bf16 near-tie; shown: that fp32 gap "
              "(positive: flashsvd's token scores higher), flashsvd's bf16 error and the peer's own logits' error "
              "against that fp32 reference, over the logits' RMS"
              + ("; with B sequences: sequence 0's, whose prompt is the same in flashsvd and the peers; "
                 "rows differ: not all of a peer's B equal sequences generated the same tokens" if batched else "")
              + ")", "",
              "| model | prompt/gen | " + ("B | " if batched else "") + " | ".join(PEER_NAMES[p] for p in peers) + " |",
              "|" + "---|" * (2 + batched + len(peers))]
    for r in results:
        cells = setting_cells(r)
        for p in peers:
            m = r["matches"].get(p)
            if m is None:
                cells.append("–")
                continue
            d = m.get("divergence")
            mark = "✓" if m["ok"] else "≈" if m.get("near_tie") else "✗"
            gap = (f" (fp32 gap {d['fp32_gap_over_rms']:.3f}, bf16 error {d['bf16_error_over_rms']:.3f}, "
                   f"peer error {d['peer_error_over_rms']:.3f})" if d and not m["ok"] else "")
            rows = "" if r["peers"][p].get("rows_agree", True) else " rows differ"
            cells.append(f"{m['length']}/{m['of']} {mark}{gap}{rows}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def check_tokens(a, env, model_dir, r, row, log):
    """How far a peer's greedy tokens (row) agree with flashsvd's (r); where short, why (divergence)."""
    n = match_length(r["flashsvd"]["tokens"], row["tokens"])
    of = min(len(r["flashsvd"]["tokens"]), len(row["tokens"]))
    m = {"length": n, "of": of, "ok": n >= min(MUST_MATCH, of)}
    if not m["ok"]:
        m["divergence"] = divergence(a, env, model_dir, r["prompt"], r["flashsvd"]["tokens"], row["peer"],
                                     row["tokens"], log)
        m["near_tie"] = m["divergence"]["near_tie"]
    return m


def main():
    a = arguments()
    start = time.perf_counter()
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    log = os.path.join(a.out, "suite.log")
    settings = harness.parse_settings("512/32" if a.quick else a.settings)
    ratios = [float(r) for r in a.ratios.split(",")]
    peers = a.peers.split(",")
    env = flashsvd_env(a.flashsvd)
    results, skipped = [], []

    def save():
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump({"settings": a.__dict__, "results": results, "skipped": skipped,
                       "elapsed_s": time.perf_counter() - start}, f, indent=1)
        with open(os.path.join(a.out, "table.md"), "w") as f:
            f.write(table(results, peers, bool(a.batch)))

    dirs = {}
    longest = 0.0  # seconds of the longest step so far
    for ratio in ratios:
        d = os.path.join(a.work, f"{a.synthetic}-r{ratio:g}-s{a.rank_spread:g}")
        if not os.path.exists(os.path.join(d, "flashsvd.json")):
            t = time.perf_counter()
            run([a.flashsvd, "convert", "--synthetic", a.synthetic, "--ratio", str(ratio), "--rank-spread",
                 str(a.rank_spread), "--dtype", "bf16", "-o", d, "--force"], log, env)
            print(f"exported {d} in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
        dirs[ratio] = d

    for prompt, gen in settings:
        for ratio in ratios:
            label = model_label(a.synthetic, ratio, a.rank_spread)
            step = f"{label} {prompt}/{gen}"
            if time.perf_counter() - start + longest > a.budget_s:
                skipped.append(step)
                print(f"skipped {step}: it would end past --budget-s", file=sys.stderr, flush=True)
                continue
            step_start = time.perf_counter()
            bench = json.loads(run([a.flashsvd, "bench", "--synthetic", a.synthetic, "--ratio", str(ratio),
                                    "--rank-spread", str(a.rank_spread), "--prompt", str(prompt), "--gen", str(gen),
                                    "--device", a.device, "--precision", "fp32" if a.dtype == "fp32" else "bf16",
                                    "--json"] + (["--batch", a.batch] if a.batch else ["--repeat", str(a.repeat)]),
                                   log, env))
            # One result per flashsvd row: the single sequence's, or one per batch size.
            new = [{"model": label, "ratio": ratio, "prompt": prompt, "gen": gen, "peers": {}, "matches": {},
                   "flashsvd": row} | ({"batch": row["batch"]} if a.batch else {}) for row in bench]
            results.extend(new)
            save()
            rows = json.loads(run([sys.executable, os.path.join(HERE, "harness.py"), "--model", dirs[ratio],
                                   "--peers", ",".join(peers), "--settings", f"{prompt}/{gen}", "--device", a.device,
                                   "--dtype", a.dtype, "--repeat", str(a.repeat), "--batch", a.batch or "1"]
                                  + (["--hf-compile"] if a.hf_compile else []), log))
            by_batch = {r.get("batch", 1): r for r in new}
            for row in rows:
                r = by_batch[row["batch"]]
                r["peers"][row["peer"]] = row
                if "error" not in row:
                    r["matches"][row["peer"]] = check_tokens(a, env, dirs[ratio], r, row, log)
            save()
            longest = max(longest, time.perf_counter() - step_start)
            print(table(new, peers, bool(a.batch)), file=sys.stderr, flush=True)
    print(f"done in {time.perf_counter() - start:.0f} s; {len(skipped)} steps skipped", file=sys.stderr)
    sys.stdout.write(table(results, peers, bool(a.batch)))


if __name__ == "__main__":
    main()
