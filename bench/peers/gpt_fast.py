# A gpt-fast-style peer, the strongest plain-PyTorch decoder: a static KV
# cache written with index_copy_ at a device-side position and read whole
# under a causal mask (decoder.py, cache="masked"), so the decode step has
# fixed shapes and addresses; torch.compile(mode="reduce-overhead",
# fullgraph=True) fuses it and replays it as one CUDA graph per token, greedy
# argmax included. Prefill runs uncompiled, as in gpt-fast by default.
# With --batch B the B sequences are B copies of the prompt, all at one
# position (its best case: one mask row, one index_copy_ position for all),
# prefilled in one forward; each decode step is one graph replay for all B,
# argmax per row.
#   python3 bench/peers/gpt_fast.py --model DIR --settings 512/32 --batch 1,8,32,64
import dataclasses

import torch

import decoder
import harness


def mark_static(model, dec):
    """Weights and caches keep their addresses: graph replays read them in place
    (unmarked inputs would be copied into the graph's own buffers every step)."""
    tensors = [model.embed, model.final_norm, *dataclasses.astuple(model.lm_head), *dec.k_cache, *dec.v_cache]
    for layer in model.layers:
        tensors += [layer.attn_norm, layer.mlp_norm]
        for l in layer.linears.values():
            tensors += dataclasses.astuple(l)
    for t in tensors:
        if t is not None:
            torch._dynamo.mark_static_address(t)


def decode_one(dec, token, input_pos):
    return dec(token[:, None], input_pos).argmax(-1)  # token: [B]


@torch.inference_mode()
def run(model, prompt, gen, batch, args):
    T, device = len(prompt), model.embed.device
    torch._dynamo.reset()  # a new cache size: compile afresh rather than go dynamic
    dec = decoder.Decoder(model, T + gen, cache="masked", batch=batch)
    mark_static(model, dec)
    compiled = torch.compile(decode_one, mode="reduce-overhead", fullgraph=True, dynamic=False)
    input_pos = torch.zeros(1, dtype=torch.long, device=device)

    def prefill(tokens):
        return dec(tokens, torch.arange(T, device=device)).argmax(-1)

    def step(token, i):
        if i == 0:
            input_pos.fill_(T)
        else:
            input_pos.add_(1)  # on the device, like gpt-fast: no host round trip
        return compiled(dec, token, input_pos).clone()  # the graph's output buffer is reused

    return harness.timed_decoder_run(prefill, step, prompt, gen, batch, args.repeat, device)


@torch.inference_mode()
def logits(model, tokens):
    """Logits [vocab] of the last of `tokens` ([T] ids): one prefill, eager (the
    compiled step runs the same math)."""
    T = len(tokens)
    return decoder.Decoder(model, T, cache="masked")(tokens[None], torch.arange(T, device=tokens.device))[0]


if __name__ == "__main__":
    harness.main(["gpt_fast"])
