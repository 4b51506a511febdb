#!/usr/bin/env bash
# Session 17 device run 1: (A) ncu of the batched GEMV at B = 1, 2, 8; (B) encoder shape buckets'
# gain on changing shapes; (C) serve /v1/embeddings throughput on MiniLM bf16 vs sentence-transformers;
# (D) a compressed MiniLM on the GPU against the CPU.
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz; tar -xJf minilm.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r1; mkdir -p $R/ncu
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt
# (A) shape index (kShapes): 0 q|k|v first [3072,4096], 4 gate second [11008,1492]
prof() {  # name shape B [rows splits]
  timeout 120 ncu --clock-control none -k regex:gemv_kernel --launch-skip 2 --launch-count 1 --set full \
    -o $R/ncu/$1 -f $B/gemv_batch_bench profile "${@:2}" > $R/ncu/$1.run.txt 2>&1
  ncu -i $R/ncu/$1.ncu-rep --page details > $R/ncu/$1.details.txt 2>&1
  ncu -i $R/ncu/$1.ncu-rep --page source --print-source sass --csv > $R/ncu/$1.sass.csv 2>&1
  rm -f $R/ncu/$1.ncu-rep
}
prof s4_b1 4 1; prof s4_b2 4 2; prof s4_b2_4r1s 4 2 4 1; prof s4_b8 4 8; prof s0_b1 0 1; prof s0_b2 0 2; prof s0_b8 0 8
echo "A done $(date +%T)" >&2
# (B) buckets
for round in 1 2; do for bin in flashsvd flashsvd_nobucket; do for m in minilm-l6 bert-base; do
  timeout 100 $B/$bin bench --synthetic $m --ratio 0.5 --device cuda --batch 1,4,16,32 --seq 128 --new-shapes --repeat 40 --json > $R/bucket_${bin}_${m}_r$round.json 2>$R/bucket_${bin}_${m}_r$round.err
done; done; done
echo "B done $(date +%T)" >&2
# (C) serving embeddings
$B/flashsvd serve -m $PWD/minilm-bf16 --device cuda --port 8000 > $R/serve.log 2>&1 &
SP=$!
for i in $(seq 60); do curl -s localhost:8000/v1/models >/dev/null && break; sleep 1; done
for c in 1 8 32 64; do
  timeout 120 python3 $OLDPWD/bench/server/embed_load.py --url http://127.0.0.1:8000 --texts $PWD/sentences.txt \
    --concurrency $c --requests 8 --inputs 16 > $R/embed_load_c$c.json 2>$R/embed_load_c$c.err
done
kill $SP; wait $SP
timeout 200 python3 $OLDPWD/bench/encoder/st_throughput.py --model $PWD/minilm-bf16 --texts $PWD/sentences.txt --batch 16,32,128 > $R/st.json 2>$R/st.err
( time $B/flashsvd embed -m $PWD/minilm-bf16 --device cuda --input $PWD/sentences.txt --batch 128 -o $R/emb_cuda.npy ) > $R/embed_time.txt 2>&1
echo "C done $(date +%T)" >&2
# (D) compressed MiniLM on GPU vs CPU
head -400 sentences.txt > eval.txt; tail -n +401 sentences.txt > calib.txt
timeout 200 $B/flashsvd compress -m $PWD/minilm-bf16 --ratio 0.5 -o $PWD/minilm-k05 --calib calib.txt > $R/compress.log 2>&1
for d in "cpu --precision fp32" "cuda --precision fp32" "cuda --precision bf16"; do
  n=$(echo $d | tr -d ' -'); timeout 120 $B/flashsvd embed -m $PWD/minilm-k05 --device $d --input eval.txt -o $R/k05_$n.npy > $R/k05_$n.log 2>&1
done
python3 - > $R/k05_cosines.txt 2>&1 <<'PY'
import numpy as np, glob, os
R=os.environ['OUT']+'/r1'
a=np.load(R+'/k05_cpuprecisionfp32.npy')
for n in ['cudaprecisionfp32','cudaprecisionbf16']:
    b=np.load(R+f'/k05_{n}.npy'); c=(a*b).sum(1)/np.linalg.norm(a,axis=1)/np.linalg.norm(b,axis=1)
    print(n, 'rows', len(c), 'min cos', c.min(), 'mean', c.mean())
PY
echo "D done $(date +%T)" >&2
cd $OUT && tar -czf r1.tgz r1 && rm -rf r1
