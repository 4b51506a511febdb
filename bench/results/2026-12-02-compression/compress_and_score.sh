#!/usr/bin/env bash
# Default model: compress then ppl (CPU, first WINDOWS windows of 512). KEEP NAME FLAGS...
# OUT: the directory prepare.sh filled (its calibration.txt, dense/); CALIB: --calib-tokens;
# TEXTS: texts to score; FSVD: the binary. Progress lines get seconds since the start.
F=${FSVD:-build/flashsvd}; out=${OUT:-/tmp/h22}; keep=$1; name=$2; shift 2
m=$out/models/k${keep}_$name
mkdir -p "$out/models" "$out/logs"
stamp() { python3 -c 'import sys, time
t0 = time.time()
for line in sys.stdin: print(f"{time.time() - t0:7.1f} {line}", end="", flush=True)'; }
/usr/bin/time -f "%e s wall, %U s user, %M KB max RSS" $F compress -m $out/dense --ratio $keep "$@" --calib $out/calibration.txt \
  --calib-tokens ${CALIB:-4096} --calib-ctx 512 -t 1 -o $m --force 2>&1 | stamp > $out/logs/compress_k${keep}_$name.log
for text in ${TEXTS:-wikitext2_test}; do
  $F ppl -m $m --text /work/shared/data/text/$text.txt --ctx 512 --max-windows ${WINDOWS:-8} -t 1 --json \
    > $out/logs/ppl_k${keep}_${name}_$text.json 2>$out/logs/ppl_k${keep}_${name}_$text.err
done
