# What every peer shares: the command line, the prompt, the timing rule and
# the JSON it prints. Timing follows `flashsvd bench` (src/apps/cmd_bench.cpp):
# prefill is the best of --repeat runs; then `gen` decode steps, the first
# timed apart (compilation and graph capture land there), decode ms/token the
# mean of steps 2..gen; the clock reads after a device synchronize. The
# reported tokens are the prefill's greedy token and one per decode step
# (first 16), which run_suite.py checks against flashsvd's.
# --batch B1,B2,...: each peer also decodes B copies of the prompt at once (one
# row per B); a decode step then yields B tokens, so decode_tokens_per_s is
# B * 1000 / decode_ms_per_token (flashsvd bench --batch's tokens/s); the
# reported tokens are sequence 0's, and rows_agree says whether every copy
# generated the same tokens (equal prompts: it should).
#
#   python3 bench/peers/harness.py --model DIR --peers hf_static,dense_kv,gpt_fast --settings 512/32,2048/128
#   python3 bench/peers/harness.py --model DIR --settings 512/32 --batch 1,8,32,64
#   python3 bench/peers/gpt_fast.py --model DIR --settings 512/32      (one peer)
#   python3 bench/peers/harness.py --model DIR --peers dense_kv --logits-for 1,5,9 --logits-out x.npy
#     (no timing: the peer's float32 logits of the sequence's last position, [1, vocab])
import argparse
import importlib
import json
import sys
import time
import traceback

import numpy
import torch

import native

PEERS = ("hf_static", "dense_kv", "gpt_fast")
REPORTED_TOKENS = 16
WARMUP_STEPS = 3  # decode steps of the untimed warm-up run (torch.compile needs ~3 to capture)


def prompt_tokens(n, vocab):
    """flashsvd bench's prompt: token i is (1 + 7919 i) mod vocab."""
    return [(1 + 7919 * i) % vocab for i in range(n)]


def clock(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def timed_decoder_run(prefill, step, prompt, gen, batch, repeat, device):
    """Times a peer given as two functions over a shared cache of `batch` rows:
    prefill(tokens [batch, T] tensor) -> greedy next tokens (a [batch] device tensor),
    and step(tokens [batch], i) -> next tokens, decoding position len(prompt) + i.
    Returns the row fields: prefill_ms, first_decode_ms, decode_ms_per_token, tokens
    (sequence 0's), rows_agree."""
    tokens = torch.tensor([prompt] * batch, device=device)
    nxt = prefill(tokens)  # warm-up: kernels, allocator, compilation
    for i in range(WARMUP_STEPS):
        nxt = step(nxt, i)
    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = clock(device)
        nxt = prefill(tokens)
        best = min(best, clock(device) - t0)
    out = [nxt]
    t0 = clock(device)
    nxt = step(nxt, 0)
    out.append(nxt)
    t1 = clock(device)
    for i in range(1, gen):
        nxt = step(nxt, i)
        out.append(nxt)
    t2 = clock(device)
    first = (t1 - t0) * 1e3
    out = torch.stack(out, dim=1)  # [batch, 1 + gen]
    return {"prefill_ms": best * 1e3, "first_decode_ms": first,
            "decode_ms_per_token": (t2 - t1) * 1e3 / (gen - 1) if gen > 1 else first,
            "tokens": out[0, :REPORTED_TOKENS].tolist(), "rows_agree": bool((out == out[:1]).all())}


def parse_settings(text):
    settings = []
    for item in text.split(","):
        prompt, gen = item.split("/")
        settings.append((int(prompt), int(gen)))
    return settings


def arguments(peers_default):
    p = argparse.ArgumentParser(description="Peer runtimes on a flashsvd native model, timed like flashsvd bench")
    p.add_argument("--model", required=True, help="native model directory (flashsvd convert)")
    p.add_argument("--peers", default=",".join(peers_default), help="comma-separated, of " + ", ".join(PEERS))
    p.add_argument("--settings", default="512/32", help="prompt/gen pairs, comma-separated")
    p.add_argument("--batch", default="1", help="batch sizes, comma-separated: sequences decoded together")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp32"))
    p.add_argument("--repeat", type=int, default=3, help="prefill runs (the fastest counts)")
    p.add_argument("--hf-compile", action="store_true",
                   help="hf_static: let generate() auto-compile the static-cache forward (default: eager, "
                        "the paper's baseline)")
    p.add_argument("--out", help="also write the JSON rows here")
    p.add_argument("--logits-for", help="comma-separated token ids: write one peer's logits of the last one instead")
    p.add_argument("--logits-out", help="the .npy file for --logits-for")
    a = p.parse_args()
    if a.logits_for and (not a.logits_out or "," in a.peers):
        p.error("--logits-for needs --logits-out and a single peer")
    return a


def main(peers_default=PEERS):
    args = arguments(peers_default)
    device = torch.device(args.device)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    t = time.perf_counter()
    model = native.load(args.model, device, dtype)
    print(f"loaded {args.model} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    if args.logits_for:
        tokens = torch.tensor([int(t) for t in args.logits_for.split(",")], device=device)
        logits = importlib.import_module(args.peers).logits(model, tokens)
        numpy.save(args.logits_out, logits.float().cpu().numpy()[None])
        return
    vocab = model.config["vocab"]
    rows = []
    for prompt, gen in parse_settings(args.settings):
        for batch in (int(b) for b in args.batch.split(",")):
            for name in args.peers.split(","):
                peer = importlib.import_module(name)
                print(f"peer {name}: prompt {prompt}, gen {gen}, batch {batch}", file=sys.stderr, flush=True)
                t = time.perf_counter()
                row = {"peer": name, "model": args.model, "prompt": prompt, "gen": gen, "batch": batch,
                       "dtype": args.dtype,
                       "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                       "torch": torch.__version__}
                try:
                    row.update(peer.run(model, prompt_tokens(prompt, vocab), gen, batch, args))
                    row["decode_tokens_per_s"] = batch * 1e3 / row["decode_ms_per_token"]
                except Exception as e:  # one failing peer (out of memory, a compiler error) spares the others
                    traceback.print_exc()
                    row["error"] = f"{type(e).__name__}: {e}"
                row["wall_s"] = time.perf_counter() - t
                print(json.dumps({k: v for k, v in row.items() if k != "tokens"}), file=sys.stderr, flush=True)
                rows.append(row)
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    text = json.dumps(rows, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
