#!/usr/bin/env bash
# The main job, on the CPU: build flashsvd, fetch the default model
# (SmolLM2-135M-Instruct) on first use, compress it (SVD-LLM whitening,
# sequential, o and down re-fitted to the dense residual stream, budgeted
# ranks: the flags and keep in scripts/demo_settings.sh, the whole model's
# kept parameter fraction; FLASHSVD_DEMO_KEEP to change), and
# show the dense and the compressed model side by side: size, perplexity on a
# short text, decode speed, and each one's greedy continuation of the same
# prompt.
#   bash scripts/demo.sh ["your prompt"]
# Calibration (scripts/demo_text/calibration.txt, then samples.txt: the dense
# model's own samples, made once by make_samples.sh) and scoring
# (evaluation.txt) read fixed, disjoint texts, so the demo needs nothing
# beyond the model and its numbers do not move when the docs change.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/demo_settings.sh
prompt=${1:-$demo_prompt}
keep=${FLASHSVD_DEMO_KEEP:-$demo_keep}
dir=${FLASHSVD_BUILD_DIR:-build}
say() { echo "== $*" >&2; }

say "building (first run: a few minutes)"
bash scripts/build.sh
fsvd=$dir/flashsvd
say "fetching the default model (first run only)"
dense=$($fsvd pull)

work=$dir/demo
compressed=$work/smollm2-keep$keep
mkdir -p "$work"
texts=scripts/demo_text
cat "$texts/calibration.txt" "$texts/samples.txt" >"$work/calibration.txt"
say "compressing to keep $keep of the model ($demo_compress_flags, $texts/calibration.txt and samples.txt; minutes on 2 cores)"
# shellcheck disable=SC2086  # the flags are words
$fsvd compress -m "$dense" --ratio "$keep" $demo_compress_flags --calib "$work/calibration.txt" \
  --dtype bf16 -o "$compressed" --force 2>"$work/compress.log" || { cat "$work/compress.log" >&2; exit 1; }
grep "^compressed" "$work/compress.log" >&2

for m in dense compressed; do
  path=${!m}
  say "$m: size, perplexity on $texts/evaluation.txt, continuation"
  { $fsvd info --json -m "$path" >"$work/$m.info.json" &&
    $fsvd ppl --json -m "$path" --text "$texts/evaluation.txt" --ctx 512 --max-windows 1 >"$work/$m.ppl.json" &&
    $fsvd generate --json -n "$demo_tokens" --temp 0 -p "$prompt" -m "$path" >"$work/$m.gen.json"; } 2>"$work/$m.log" ||
    { cat "$work/$m.log" >&2; exit 1; }
done

python3 - "$work" "$dense" "$compressed" "$keep" "$prompt" <<'PY'
import json, os, sys
work, dense_path, comp_path, keep, prompt = sys.argv[1:]
get = lambda m, what: json.load(open(f"{work}/{m}.{what}.json"))
def disk(path):
    files = [path] if os.path.isfile(path) else [os.path.join(path, f) for f in os.listdir(path)]
    return sum(os.path.getsize(f) for f in files) / 1e6
info = {m: get(m, "info") for m in ("dense", "compressed")}
ppl = {m: get(m, "ppl") for m in info}
gen = {m: get(m, "gen") for m in info}
p = {m: info[m]["params"] for m in info}
rows = [
    ("parameters", f"{p['dense'] / 1e6:.1f} M", f"{p['compressed'] / 1e6:.1f} M ({100 * p['compressed'] / p['dense']:.0f}%)"),
    ("weights in memory (fp32)", f"{4 * p['dense'] / 1e6:.0f} MB", f"{4 * p['compressed'] / 1e6:.0f} MB"),
    ("file on disk", f"{disk(dense_path):.0f} MB (GGUF, 4-bit Q4_1)", f"{disk(comp_path):.0f} MB (native, bf16)"),
    ("perplexity, evaluation text (512 tokens)", f"{ppl['dense']['perplexity']:.2f}", f"{ppl['compressed']['perplexity']:.2f}"),
    ("decode speed (CPU, greedy)", f"{gen['dense']['decode_tokens_per_second']:.1f} tokens/s",
     f"{gen['compressed']['decode_tokens_per_second']:.1f} tokens/s"),
]
w = [max(len(r[i]) for r in rows + [("", "dense", f"compressed (keep {keep})")]) for i in range(3)]
line = lambda r: "  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip()
print(line(("", "dense", f"compressed (keep {keep})")))
for r in rows:
    print(line(r))
for m in info:
    print(f"\n--- {m} ---\n{prompt}{gen[m]['text'].rstrip() or ' (nothing: end of sequence)'}")
PY
echo >&2
say "compressed model: $compressed (try: $fsvd generate -m $compressed -p \"...\"); accuracy by ratio: docs/accuracy.md"
