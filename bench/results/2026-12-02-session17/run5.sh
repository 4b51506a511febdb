#!/usr/bin/env bash
# Session 17 device run 5 (main 794fe9e + embed_load warm-up): embeddings serving at steady state and its
# peer; the decode-many table and Table 5 rows with the stacked second factors.
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz; tar -xJf minilm.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r5; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt
$B/flashsvd serve -m $PWD/minilm-bf16 --device cuda --port 8000 > $R/serve.log 2>&1 &
SP=$!
for i in $(seq 60); do curl -s localhost:8000/v1/models >/dev/null && break; sleep 1; done
for c in 1 8 32 64 128; do
  timeout 120 python3 $OLDPWD/bench/server/embed_load.py --url http://127.0.0.1:8000 --texts $PWD/sentences.txt \
    --concurrency $c --requests 8 --inputs 16 --warmup 2 > $R/embed_load_c$c.json 2>$R/embed_load_c$c.err
done
kill $SP; wait $SP
timeout 200 python3 $OLDPWD/bench/encoder/st_throughput.py --model $PWD/minilm-bf16 --texts $PWD/sentences.txt --batch 16,32,128 > $R/st.json 2>$R/st.err
echo "C done $(date +%T)" >&2
for r in 0.5 1.0; do
  timeout 120 $B/flashsvd bench --synthetic llama-7b --ratio $r --batch 1,8,32,64 --prompt 512 --gen 32 --json > $R/dec_$r.json 2>$R/dec_$r.err
  timeout 60 $B/flashsvd bench --synthetic bert-base --ratio $r --device cuda --batch 32 --seq 512 --json > $R/enc_$r.json 2>/dev/null
  timeout 60 $B/flashsvd bench --synthetic bert-base --ratio $r --device cuda --batch 32 --seq 512 --varlen --json > $R/enc_varlen_$r.json 2>/dev/null
done
echo "D done $(date +%T)" >&2
cd $OUT && tar -czf r5.tgz r5 && rm -rf r5
