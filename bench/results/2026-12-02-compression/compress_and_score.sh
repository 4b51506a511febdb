#!/usr/bin/env bash
# Default model: compress then WikiText-2 ppl (CPU, first WINDOWS windows of 512). KEEP NAME FLAGS...
F=${FSVD:-build/flashsvd}; keep=$1; name=$2; shift 2
m=${OUT:-/tmp/h22}/models/k${keep}_$name
/usr/bin/time -f "%e s wall, %U s user, %M KB max RSS" $F compress -m ${OUT:-/tmp/h22}/dense --ratio $keep "$@" --calib ${OUT:-/tmp/h22}/calibration.txt \
  --calib-tokens ${CALIB:-4096} --calib-ctx 512 -t 1 -o $m --force > ${OUT:-/tmp/h22}/logs/compress_k${keep}_$name.log 2>&1
for text in ${TEXTS:-wikitext2_test}; do
  $F ppl -m $m --text /work/shared/data/text/$text.txt --ctx 512 --max-windows ${WINDOWS:-8} -t 1 --json > ${OUT:-/tmp/h22}/logs/ppl_k${keep}_${name}_$text.json 2>${OUT:-/tmp/h22}/logs/ppl_k${keep}_${name}_$text.err
done
