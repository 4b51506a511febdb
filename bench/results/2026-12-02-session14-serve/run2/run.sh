#!/usr/bin/env bash
# Session 14 device call: the CUDA executor tests, then `flashsvd serve` on LLaMA-7B shapes (keep 0.5, bf16)
# under bench/server/load.py at concurrency 1, 8, 32, 64, then SIGTERM.
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz
B=$PWD/gpu-bundle
R=/tmp/r; mkdir -p $R
finish() { tar -cJf $OUT/r.tar.xz -C /tmp r; cp $R/summary.txt $OUT/; }
trap finish EXIT
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv | tee $R/gpu.txt
echo start > $R/summary.txt
for mode in "fp32 16 32 64" "bf16 64 512 128"; do
  set -- $mode; prec=$1; mb=$2; pt=$3; mt=$4; ratio=0.5
  $B/flashsvd serve --synthetic llama-7b --ratio $ratio --tokenizer $PWD/tokenizer.model --device cuda --precision $prec \
    --max-batch $mb --ctx 1024 --port 0 > $R/port_$prec.txt 2> $R/serve_$prec.log &
  pid=$!
  for i in $(seq 1 120); do [ -s $R/port_$prec.txt ] && break; sleep 1; done
  port=$(head -1 $R/port_$prec.txt)
  echo "$prec port $port" | tee -a $R/summary.txt
  for c in 64; do
    n=2
    echo "c=$c rss_kib_before=$(ps -o rss= -p $pid)" | tee -a $R/summary.txt
    timeout 200 python3 ../bench/server/load.py --url http://127.0.0.1:$port --concurrency $c --requests $n \
      --prompt-tokens $pt --max-tokens $mt > $R/load_${prec}_c$c.json 2> $R/load_${prec}_c$c.log
    echo "c=$c rc=$?" | tee -a $R/summary.txt
    python3 -c "import json;d=json.load(open('$R/load_${prec}_c$c.json'));print({k:d[k] for k in ['requests','error_count','mismatch_count','requests_per_s','generated_tokens_per_s','ttft_p50_s','inter_chunk_p50_s','inter_chunk_p99_s']})" | tee -a $R/summary.txt
  done
  echo "rss_kib_end=$(ps -o rss= -p $pid)" | tee -a $R/summary.txt
  curl -s http://127.0.0.1:$port/metrics | grep -E '^flashsvd_(requests_running|requests_waiting|kv_blocks_used|generation_tokens_total|http_requests_total)' | tee -a $R/summary.txt
  kill -TERM $pid; timeout 30 tail --pid=$pid -f /dev/null; wait $pid; echo "serve exit $?" | tee -a $R/summary.txt
done
