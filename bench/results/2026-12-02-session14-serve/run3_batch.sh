#!/usr/bin/env bash
# Session 14 device call 2 of 2: `flashsvd batch` on 1,000 default-model requests, batched and one by one
# (--max-batch 1), in fp32 (exact) and bf16; every greedy output compared. Needs ../build-gpu from call 1.
set -u
cd "$(dirname "$0")"
R=/tmp/rb; mkdir -p $R
finish() { tar -cJf $OUT/rb.tar.xz -C /tmp rb; cp $R/summary.txt $OUT/ 2>/dev/null; }
trap finish EXIT
G=../build-gpu
cat $G/gguf.part.aa gguf.part.ab > $R/model.gguf
sha256sum $R/model.gguf | tee $R/summary.txt
[ -d $G/gpu-bundle ] || tar -xJf $G/b.tar.xz -C $G
B=$G/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
for prec in fp32 bf16; do
  mb=64; [ $prec = fp32 ] && mb=16
  for b in $mb 1; do
    s=$(date +%s.%N)
    timeout 200 $B/flashsvd batch -m $R/model.gguf --device cuda --precision $prec --max-batch $b --ctx 1024 \
      --input requests.jsonl -o $R/out_${prec}_b$b.jsonl 2> $R/batch_${prec}_b$b.log
    rc=$?; e=$(date +%s.%N)
    echo "$prec max-batch $b rc $rc wall $(python3 -c "print(round($e-$s,2))") s; $(tail -1 $R/batch_${prec}_b$b.log)" | tee -a $R/summary.txt
  done
  python3 - $R/out_${prec}_b$mb.jsonl $R/out_${prec}_b1.jsonl <<'PY' | tee -a $R/summary.txt
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
errors = sum('error' in x for x in a) + sum('error' in x for x in b)
same = sum(x.get('text') == y.get('text') and x.get('completion_tokens') == y.get('completion_tokens') for x, y in zip(a, b))
print(f"{sys.argv[1].split('/')[-1]}: {len(a)} results, {len(b)} one by one, errors {errors}, identical {same}/{len(a)}")
PY
done
