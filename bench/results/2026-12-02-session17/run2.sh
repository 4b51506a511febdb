#!/usr/bin/env bash
# Session 17 device run 2: (A) per-kernel times of the encoder pass (bert-base keep 0.5, 32 x 512) and of
# the batched decode step (B = 8); (B) buckets at steady state; (C) embeddings serving, base64 clients.
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz; tar -xJf minilm.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r2; mkdir -p $R
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS" > $R/tools.txt; command -v ncu >> $R/tools.txt
if [ -n "$NSYS" ]; then
  for spec in "enc 0.5 bench --synthetic bert-base --ratio 0.5 --device cuda --batch 32 --seq 512 --repeat 20" \
              "enc 1.0 bench --synthetic bert-base --ratio 1.0 --device cuda --batch 32 --seq 512 --repeat 20" \
              "dec 0.5 bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 512 --gen 16" \
              "dec32 0.5 bench --synthetic llama-7b --ratio 0.5 --batch 32 --prompt 512 --gen 16"; do
    set -- $spec; name=$1_$2; shift 2
    timeout 240 $NSYS profile -t cuda --cuda-graph-trace=node -o $R/$name -f true $B/flashsvd "$@" > $R/$name.out 2>&1
    $NSYS stats -r cuda_gpu_kern_sum -f csv $R/$name.nsys-rep > $R/${name}_kern.csv 2>/dev/null
    $NSYS stats -r cuda_gpu_trace -f csv $R/$name.nsys-rep 2>/dev/null | xz > $R/${name}_trace.csv.xz
    rm -f $R/$name.nsys-rep $R/$name.sqlite
  done
else
  timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base --launch-count 1500 \
    $B/flashsvd bench --synthetic bert-base --ratio 0.5 --device cuda --batch 32 --seq 512 --repeat 1 2>/dev/null | xz > $R/ncu_enc.csv.xz
fi
echo "A done $(date +%T)" >&2
for round in 1 2; do for bin in flashsvd flashsvd_nobucket; do for m in minilm-l6 bert-base; do
  timeout 100 $B/$bin bench --synthetic $m --ratio 0.5 --device cuda --batch 1,4,16,32 --seq 128 --new-shapes --repeat 100 --json > $R/bucket_${bin}_${m}_r$round.json 2>$R/bucket_${bin}_${m}_r$round.err
done; done; done
echo "B done $(date +%T)" >&2
$B/flashsvd serve -m $PWD/minilm-bf16 --device cuda --port 8000 > $R/serve.log 2>&1 &
SP=$!
for i in $(seq 60); do curl -s localhost:8000/v1/models >/dev/null && break; sleep 1; done
for c in 1 8 32 64 128; do
  timeout 120 python3 $OLDPWD/bench/server/embed_load.py --url http://127.0.0.1:8000 --texts $PWD/sentences.txt \
    --concurrency $c --requests 8 --inputs 16 > $R/embed_load_c$c.json 2>$R/embed_load_c$c.err
done
timeout 120 python3 $OLDPWD/bench/server/embed_load.py --url http://127.0.0.1:8000 --texts $PWD/sentences.txt \
    --concurrency 64 --requests 8 --inputs 16 --float-json > $R/embed_load_c64_float.json 2>$R/embed_load_c64_float.err
kill $SP; wait $SP
for b in 32 128; do $B/flashsvd embed -m $PWD/minilm-bf16 --device cuda --input $PWD/sentences.txt --batch $b -o $R/e$b.npy > $R/embed_b$b.txt 2>&1; done
rm -f $R/e*.npy
echo "C done $(date +%T)" >&2
cd $OUT && tar -czf r2.tgz r2 && rm -rf r2
