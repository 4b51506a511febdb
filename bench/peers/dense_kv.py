# The paper's "Dense KV-Cache" baseline in plain PyTorch: each step
# reconstructs the current token's q, k, v through the factor chains
# (decoder.py), appends k and v to a dense preallocated cache, and runs SDPA
# over the valid prefix. No packing, no CUDA graphs, no compilation: every op
# is an eager launch. (The paper used flash_attn_with_kvcache; SDPA's flash
# backend does the same work on a contiguous dense cache.)
#   python3 bench/peers/dense_kv.py --model DIR --settings 512/32
import torch

import decoder
import harness


@torch.inference_mode()
def run(model, prompt, gen, args):
    T = len(prompt)
    dec = decoder.Decoder(model, T + gen, cache="prefix")
    prefill = lambda tokens: dec(tokens, 0).argmax()[None]
    step = lambda token, i: dec(token, T + i).argmax()[None]
    return harness.timed_decoder_run(prefill, step, prompt, gen, args.repeat, model.embed.device)


@torch.inference_mode()
def logits(model, tokens):
    """Logits [vocab] of the last of `tokens` ([T] ids): one prefill."""
    return decoder.Decoder(model, len(tokens), cache="prefix")(tokens, 0)


if __name__ == "__main__":
    harness.main(["dense_kv"])
