#!/usr/bin/env bash
# Converts the default model once and writes the calibration text the way
# the removed scripts/accuracy_default_model.sh did (the tails of the three texts), for
# CALIB_TOKENS tokens. Usage: prepare.sh FLASHSVD TEXTS OUT
set -euo pipefail
fsvd=$1 texts=$2 out=$3 calib_tokens=${CALIB_TOKENS:-8192}
mkdir -p "$out"
[ -d "$out/dense" ] || "$fsvd" convert "$("$fsvd" pull)" -o "$out/dense"
per_text_bytes=$((calib_tokens * 3 / 2))
: >"$out/calibration.txt"
for t in wikitext2_test ptb_test tinystories_val_head; do
  tail -c "$per_text_bytes" "$texts/$t.txt" | sed 1d >>"$out/calibration.txt"  # drop the cut first line
  printf '\n' >>"$out/calibration.txt"
  echo "$t $(stat -c %s "$texts/$t.txt") $(tail -c "$per_text_bytes" "$texts/$t.txt" | sed 1d | wc -c)"
done >"$out/calibration_sources.txt"
