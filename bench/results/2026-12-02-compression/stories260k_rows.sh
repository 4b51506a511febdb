#!/usr/bin/env bash
# stories260K rows: KEEP, then "name:flags" pairs.
D=/work/shared/data; M=$D/models/stories260K/stories260K.bin; T=$D/models/stories260K/tok512.bin
F=${FSVD:-build/flashsvd}; out=${OUT:-/tmp/h22/s260k}; keep=$1; shift
for v in "$@"; do name=${v%%:*}; flags=${v#*:}
  m=$out/k${keep}_$name
  $F compress -m $M --tokenizer $T --ratio $keep $flags --calib $D/text/tinystories_val_head.txt -t 1 -o $m --force > $m.compress.log 2>&1
  for text in wikitext2_test ptb_test tinystories_val_head; do
    echo "k$keep $name $text $($F ppl -m $m --text $D/text/$text.txt --ctx 512 --max-windows 64 -t 1 --json 2>/dev/null)"
  done
done
