# The paper's "Dense KV-Cache" baseline in plain PyTorch: each step
# reconstructs the current token's q, k, v through the factor chains
# (decoder.py), appends k and v to a dense preallocated cache, and runs SDPA
# over the valid prefix. No packing, no CUDA graphs, no compilation: every op
# is an eager launch. (The paper used flash_attn_with_kvcache; SDPA's flash
# backend does the same work on a contiguous dense cache.) With --batch B:
# B copies of the prompt, all at one position, a step decodes one token each.
#   python3 bench/peers/dense_kv.py --model DIR --settings 512/32
import torch

import decoder
import harness


@torch.inference_mode()
def run(model, prompt, gen, batch, args):
    T = len(prompt)
    dec = decoder.Decoder(model, T + gen, cache="prefix", batch=batch)
    prefill = lambda tokens: dec(tokens, 0).argmax(-1)
    step = lambda token, i: dec(token[:, None], T + i).argmax(-1)
    return harness.timed_decoder_run(prefill, step, prompt, gen, batch, args.repeat, model.embed.device)


@torch.inference_mode()
def logits(model, tokens):
    """Logits [vocab] of the last of `tokens` ([T] ids): one prefill."""
    return decoder.Decoder(model, len(tokens), cache="prefix")(tokens[None], 0)[0]


if __name__ == "__main__":
    harness.main(["dense_kv"])
