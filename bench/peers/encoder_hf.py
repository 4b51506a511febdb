# The FlashSVD paper's Table 5 peers: Hugging Face transformers' BertModel
# (eager attention, sdpa, sdpa under torch.compile) with BERT-family shapes,
# dense or with every q/k/v/o/up/down factored at `keep` by flashsvd's rank
# rule r = int(out * in * keep / (out + in)) (model/synthetic.h), bf16 on the
# GPU, random weights. Inputs as `flashsvd bench --synthetic NAME --batch B
# --seq S [--varlen]` feeds them: token t of input i is (1 + 7919 (i + t)) mod
# vocab; --varlen spreads lengths over [16, S] (input i: 16 + (i * 2654435761
# mod 2^32) mod (S - 15), as flashsvd does) and HF pads to the longest
# (attention_mask marks the padding). Latency: mean of --repeat passes after
# 3 warm-up ones, each synchronized; peak memory: torch.cuda.max_memory_allocated
# over one pass (weights included).
#
#   python3 bench/peers/encoder_hf.py --model bert-base --keep 1,0.5 --batch 32 --seq 512 --json out.json
import argparse
import json
import sys
import time

import torch
import torch.nn as nn

SHAPES = {"bert-base": (768, 3072, 12, 12), "bert-large": (1024, 4096, 24, 16), "minilm-l6": (384, 1536, 6, 12)}


def rank(out, inp, keep):
    return max(1, min(out, inp, int(out * inp * keep / (out + inp))))


def factor(linear, keep):
    """The linear as two: [r, in] without bias, then [out, r] with its bias."""
    r = rank(linear.out_features, linear.in_features, keep)
    first = nn.Linear(linear.in_features, r, bias=False)
    second = nn.Linear(r, linear.out_features, bias=True)
    return nn.Sequential(first, second)


def build(name, keep, attn, device):
    from transformers import BertConfig, BertModel
    hidden, inter, layers, heads = SHAPES[name]
    cfg = BertConfig(hidden_size=hidden, intermediate_size=inter, num_hidden_layers=layers, num_attention_heads=heads,
                     max_position_embeddings=512, vocab_size=30522, attn_implementation=attn)
    torch.manual_seed(0)
    model = BertModel(cfg, add_pooling_layer=False)
    if keep < 1:
        for layer in model.encoder.layer:
            a = layer.attention
            a.self.query, a.self.key, a.self.value = (factor(a.self.query, keep), factor(a.self.key, keep),
                                                      factor(a.self.value, keep))
            a.output.dense = factor(a.output.dense, keep)
            layer.intermediate.dense = factor(layer.intermediate.dense, keep)
            layer.output.dense = factor(layer.output.dense, keep)
    return model.to(device=device, dtype=torch.bfloat16).eval()


def lengths(batch, seq, varlen):
    if not varlen:
        return [seq] * batch
    lo = min(16, seq)
    return [lo + (i * 2654435761 % 2**32) % (seq - lo + 1) for i in range(batch)]


def inputs(batch, seq, varlen, device):
    lens = lengths(batch, seq, varlen)
    longest = max(lens)
    ids = torch.zeros(batch, longest, dtype=torch.long)
    mask = torch.zeros(batch, longest, dtype=torch.long)
    for i, n in enumerate(lens):
        ids[i, :n] = torch.tensor([(1 + 7919 * (i + t)) % 30522 for t in range(n)])
        mask[i, :n] = 1
    return ids.to(device), mask.to(device), sum(lens)


def measure(model, ids, mask, repeat):
    with torch.inference_mode():
        for _ in range(3):
            model(input_ids=ids, attention_mask=mask)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        model(input_ids=ids, attention_mask=mask)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        total = 0.0
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(input_ids=ids, attention_mask=mask)
            torch.cuda.synchronize()
            total += time.perf_counter() - t0
    return total * 1e3 / repeat, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="bert-base", choices=sorted(SHAPES))
    ap.add_argument("--keep", default="1,0.5")
    ap.add_argument("--backends", default="eager,sdpa,sdpa_compiled")
    ap.add_argument("--batch", default="32")
    ap.add_argument("--seq", default="512")
    ap.add_argument("--varlen", action="store_true")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    device = torch.device("cuda")
    rows = []
    for keep in [float(k) for k in a.keep.split(",")]:
        for backend in a.backends.split(","):
            attn = "eager" if backend == "eager" else "sdpa"
            model = build(a.model, keep, attn, device)
            run = torch.compile(model) if backend == "sdpa_compiled" else model
            for seq in [int(s) for s in a.seq.split(",")]:
                for batch in [int(b) for b in a.batch.split(",")]:
                    ids, mask, tokens = inputs(batch, seq, a.varlen, device)
                    ms, peak = measure(run, ids, mask, a.repeat)
                    row = {"peer": "hf_" + backend, "model": a.model, "keep": keep, "batch": batch, "seq": seq,
                           "varlen": a.varlen, "tokens": tokens, "latency_ms": ms,
                           "sequences_per_s": batch * 1e3 / ms, "peak_bytes": peak}
                    print(json.dumps(row), file=sys.stderr, flush=True)
                    rows.append(row)
            del model, run
            torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
