#!/usr/bin/env bash
# The default model's accuracy grid for docs/accuracy.md: perplexity of the
# dense model and of keep 0.8 / 0.6 / 0.4 compressions (whitening with uniform
# and loss ranks, plain SVD with uniform ranks) on WikiText-2 test, PTB test
# and TinyStories validation. Writes OUT/accuracy_table.md and
# OUT/results.json; logs and per-run JSON under OUT/logs and OUT/ppl.
#
#   bash scripts/accuracy_default_model.sh FLASHSVD MODEL TEXT_DIR OUT
#
# MODEL: the dense model (SmolLM2-135M-Instruct GGUF); TEXT_DIR holds
# wikitext2_test.txt, ptb_test.txt and tinystories_val_head.txt. Perplexity
# runs on the GPU when there is one (bf16), else on the CPU. Settings (env):
# CTX (512), WINDOWS (first N windows of each text, 128), CALIB_TOKENS (32768),
# PRECISION_WINDOWS (16: the bf16-vs-fp32 check on the dense model).
# Work already in OUT (models, statistics, perplexities) is reused, so an
# interrupted run can be resumed.
set -euo pipefail
if [ $# -ne 4 ]; then sed -n '2,15p' "$0" >&2; exit 2; fi
bin=$(realpath "$1") model=$2 texts=$3 out=$4
ctx=${CTX:-512} windows=${WINDOWS:-128} calib_tokens=${CALIB_TOKENS:-32768} precision_windows=${PRECISION_WINDOWS:-16}
cores=$(nproc)
texts_list="wikitext2_test ptb_test tinystories_val_head"
mkdir -p "$out"/{models,ppl,logs}
log() { echo "[$(date +%T)] $*" >&2; }
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then device=cuda; else device=cpu; fi
{ date -u +%FT%TZ; lscpu | grep -E '^(Model name|CPU\(s\))' || true
  [ $device = cuda ] && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } >"$out/machine.txt"
log "device $device, $cores cores; ctx $ctx, first $windows windows of each text, $calib_tokens calibration tokens"

# 1. The dense model in the native format once: every later load is a plain read.
dense=$out/models/dense
[ -f "$dense/flashsvd.json" ] || "$bin" convert "$model" -o "$dense" --force 2>"$out/logs/convert.log"

# 2. Calibration text, disjoint from what is scored: the last lines of each
# text (about a third of the tokens from each); the scored windows are at the
# head of each file (checked in step 6).
calib=$out/calibration.txt
per_text_bytes=$((calib_tokens * 3 / 2))
: >"$calib"
for t in $texts_list; do
  tail -c "$per_text_bytes" "$texts/$t.txt" | sed 1d >>"$calib"  # drop the cut first line
  printf '\n' >>"$calib"
  echo "$t $(stat -c %s "$texts/$t.txt") $(tail -c "$per_text_bytes" "$texts/$t.txt" | sed 1d | wc -c)"
done >"$out/calibration_sources.txt"

# 3. Compressions. The first whitened one writes the calibration statistics
# (one pass over the text, most cores) while the plain SVDs (no data) run beside
# it; the other whitened ones then only read the statistics and factor, in parallel.
compress() {  # name keep method allocation threads
  local dir=$out/models/$1
  [ -f "$dir/flashsvd.json" ] && return 0
  local extra=()
  [ "$3" = whiten ] && extra=(--calib "$calib" --calib-tokens "$calib_tokens" --stats "$out/models/statistics.bin")
  "$bin" compress -m "$dense" --ratio "$2" --method "$3" --allocation "$4" -t "$5" "${extra[@]}" \
    -o "$dir" --force 2>"$out/logs/compress_$1.log"
}
variants=()
for keep in 0.8 0.6 0.4; do
  variants+=("k${keep}_whiten_uniform $keep whiten uniform" "k${keep}_whiten_loss $keep whiten loss"
    "k${keep}_svd_uniform $keep svd uniform")
done
start=$(date +%s)
log "compressing: statistics with k0.8_whiten_uniform, plain SVD beside it"
pids=()
for v in "${variants[@]}"; do
  set -- $v
  [ "$3" = svd ] && { compress "$@" 1 & pids+=($!); }
done
compress k0.8_whiten_uniform 0.8 whiten uniform $((cores > 4 ? cores - 3 : 1))
for v in "${variants[@]}"; do
  set -- $v
  [ "$3" = whiten ] && [ "$1" != k0.8_whiten_uniform ] && { compress "$@" $((cores / 5 > 0 ? cores / 5 : 1)) & pids+=($!); }
done
for p in "${pids[@]}"; do wait "$p"; done
compress_seconds=$(($(date +%s) - start))
log "compressed ${#variants[@]} models in ${compress_seconds} s"

# 4. Perplexity: one job per model and text, as many at once as there are
# cores (log-softmax over the vocabulary runs on the CPU); the GPU does the forwards.
jobs=$out/ppl_jobs.txt
: >"$jobs"
ppl_job() {  # result-name model text windows extra-flags...
  local name=$1 m=$2 t=$3 w=$4
  shift 4
  [ -s "$out/ppl/$name.json" ] && return 0
  echo "'$bin' ppl -m '$m' --text '$texts/$t.txt' --ctx $ctx --max-windows $w --json $* >'$out/ppl/$name.json.part' 2>'$out/logs/ppl_$name.log' && mv '$out/ppl/$name.json.part' '$out/ppl/$name.json'" >>"$jobs"
}
# bf16 (GPU) against fp32 (CPU, and the GPU's fp32 mode) on the dense model, on the first windows of one text.
if [ $device = cuda ]; then
  ppl_job precision_cpu_fp32 "$dense" wikitext2_test "$precision_windows" --device cpu -t 4
  ppl_job precision_cuda_fp32 "$dense" wikitext2_test "$precision_windows" --device cuda --precision fp32 -t 1
  ppl_job precision_cuda_bf16 "$dense" wikitext2_test "$precision_windows" --device cuda -t 1
fi
for v in dense "${variants[@]}"; do
  set -- $v
  for t in $texts_list; do ppl_job "$1__$t" "$out/models/$1" "$t" "$windows" --device $device -t 1; done
done
start=$(date +%s)
log "perplexity: $(wc -l <"$jobs") runs, $cores at a time"
xargs -P "$cores" -I{} -d '\n' bash -c '{}' <"$jobs" || { log "some perplexity runs failed (logs in $out/logs)"; exit 1; }
ppl_seconds=$(($(date +%s) - start))
log "perplexity done in ${ppl_seconds} s"

# 5-6. The table, the JSON, and the checks: calibration disjoint from the
# scored windows, whitening better than plain SVD everywhere.
python3 - "$out" "$ctx" "$windows" "$calib_tokens" "$compress_seconds" "$ppl_seconds" "$device" <<'PY'
import json, os, sys
out, ctx, windows, calib_tokens, compress_s, ppl_s, device = sys.argv[1:]
ctx, windows = int(ctx), int(windows)
texts = ["wikitext2_test", "ptb_test", "tinystories_val_head"]
heads = {"wikitext2_test": "WikiText-2 test", "ptb_test": "PTB test", "tinystories_val_head": "TinyStories val"}
load = lambda p: json.load(open(p))
ppl = lambda name: load(f"{out}/ppl/{name}.json")

def manifest(name):
    m = load(f"{out}/models/{name}/flashsvd.json")
    return m.get("provenance", m)

rows = [{"name": "dense", "label": "dense"}]
for keep in ["0.8", "0.6", "0.4"]:
    for method, alloc in [("whiten", "uniform"), ("whiten", "loss"), ("svd", "uniform")]:
        rows.append({"name": f"k{keep}_{method}_{alloc}", "label": f"keep {keep}, {method}, {alloc}",
                     "keep": float(keep), "method": method, "allocation": alloc})
dense_params = manifest("k0.8_svd_uniform")["dense_params"]
for r in rows:
    r["params"] = dense_params if r["name"] == "dense" else manifest(r["name"])["params"]
    r["perplexity"] = {t: ppl(f"{r['name']}__{t}")["perplexity"] for t in texts}
    log = f"{out}/logs/compress_{r['name']}.log"
    if os.path.exists(log):
        done = [l for l in open(log) if "compressed" in l and " s:" in l]
        if done: r["compress_seconds"] = float(done[-1].split(" in ")[1].split(" s")[0])

# Calibration: the last bytes of each text; scored: its first windows*ctx tokens.
# Disjoint when the scored share of the tokens plus the calibration share of the
# bytes stays well under 1 (a margin for uneven bytes per token).
sources, disjoint = {}, True
for line in open(f"{out}/calibration_sources.txt"):
    name, size, used = line.split()
    tokens = ppl(f"dense__{name}")["text_tokens"]
    scored = windows * ctx / tokens
    calib = int(used) / int(size)
    sources[name] = {"file_bytes": int(size), "calibration_bytes": int(used), "text_tokens": tokens,
                     "scored_tokens": windows * ctx, "scored_share": scored, "calibration_share": calib}
    disjoint &= scored + calib < 0.9
k = manifest("k0.8_whiten_uniform")["calibration"]

beats = {}
for keep in ["0.8", "0.6", "0.4"]:
    svd = next(r for r in rows if r["name"] == f"k{keep}_svd_uniform")
    for alloc in ["uniform", "loss"]:
        w = next(r for r in rows if r["name"] == f"k{keep}_whiten_{alloc}")
        for t in texts:
            beats[f"keep {keep} {alloc} {t}"] = w["perplexity"][t] < svd["perplexity"][t]

extra = {}
for name in ["precision_cpu_fp32", "precision_cuda_fp32", "precision_cuda_bf16"]:
    if os.path.exists(f"{out}/ppl/{name}.json"):
        extra[name] = ppl(name)

result = {"device": device, "machine": open(f"{out}/machine.txt").read().strip().splitlines(),
          "ctx": ctx, "windows": windows, "calibration": {"tokens_requested": int(calib_tokens), "used": k,
                                                            "sources": sources, "disjoint_from_scored": disjoint},
          "compress_wall_seconds": int(compress_s), "ppl_wall_seconds": int(ppl_s), "rows": rows,
          "whiten_beats_svd": beats, "precision_check": extra}
json.dump(result, open(f"{out}/results.json", "w"), indent=1)

lines = ["| model | params (% dense) | " + " | ".join(heads[t] for t in texts) + " |",
         "|---|---|" + "---|" * len(texts)]
for i, r in enumerate(rows):
    group = [g for g in rows if g.get("keep") == r.get("keep")] if "keep" in r else [r]
    cells = []
    for t in texts:
        v = r["perplexity"][t]
        best = len(group) > 1 and v == min(g["perplexity"][t] for g in group)
        cells.append(f"**{v:.2f}**" if best else f"{v:.2f}")
    lines.append(f"| {r['label']} | {r['params']:,} ({100 * r['params'] / dense_params:.1f}%) | " + " | ".join(cells) + " |")
open(f"{out}/accuracy_table.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
if extra:
    print(f"\ndense, first {next(iter(extra.values()))['windows']} windows of wikitext2_test: " +
          ", ".join(f"{n.removeprefix('precision_')} {e['perplexity']:.4f}" for n, e in extra.items()))
print(f"\ncalibration disjoint from the scored windows: {disjoint}; whitening beats plain SVD in "
      f"{sum(beats.values())}/{len(beats)} cells" + ("" if all(beats.values()) else
      ": NOT in " + ", ".join(k for k, v in beats.items() if not v)))
PY
