# The paper's baseline: Hugging Face transformers' LlamaForCausalLM with SDPA
# attention and a static KV cache, driven by generate(). Built from a
# LlamaConfig (nothing downloaded); each low-rank linear becomes
# nn.Sequential(Linear(in, r, bias=False), Linear(r, out)), and the native
# tensors are assigned as its parameters (no copies). generate() runs eager
# unless --hf-compile lets it auto-compile the static-cache forward. With
# --batch B, generate() gets B copies of the prompt (a [B, T] batch, no
# padding) and each step decodes one token per row.
#   python3 bench/peers/hf_static.py --model DIR --settings 512/32
import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, LogitsProcessor, LogitsProcessorList
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

import harness
import native

PROJ = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
        "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}


def hf_config(c):
    s = c["rope_scaling"]
    rope = {"rope_type": "default", "rope_theta": c["rope_theta"]}
    if s["type"] == "llama3":
        rope.update(rope_type="llama3", factor=s["factor"], low_freq_factor=s["low_freq_factor"],
                    high_freq_factor=s["high_freq_factor"], original_max_position_embeddings=s["original_max_position"])
    config = LlamaConfig(vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["intermediate"],
                         num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
                         num_key_value_heads=c["kv_heads"], head_dim=c["head_dim"], rms_norm_eps=c["rms_eps"],
                         max_position_embeddings=max(c["max_seq"], 16384), rope_parameters=rope,
                         tie_word_embeddings=c["tied_embeddings"], bos_token_id=None, eos_token_id=None,
                         pad_token_id=None)
    config._attn_implementation = "sdpa"
    return config


def hf_model(model):
    """LlamaForCausalLM over the native tensors."""
    if model.lm_head.second is not None or any(
            l.bias is not None for layer in model.layers for l in layer.linears.values()):
        raise NotImplementedError("a low-rank lm_head or biased projections are not wired into the HF peer")
    with torch.device("meta"):
        hf = LlamaForCausalLM(hf_config(model.config))
    state = {"model.embed_tokens.weight": model.embed, "model.norm.weight": model.final_norm,
             "lm_head.weight": model.lm_head.first}
    for i, layer in enumerate(model.layers):
        block = hf.model.layers[i]
        state[f"model.layers.{i}.input_layernorm.weight"] = layer.attn_norm
        state[f"model.layers.{i}.post_attention_layernorm.weight"] = layer.mlp_norm
        for name, path in PROJ.items():
            l, prefix = layer.linears[name], f"model.layers.{i}.{path}"
            if l.second is None:
                state[prefix + ".weight"] = l.first
                continue
            r, d_in = l.first.shape
            with torch.device("meta"):
                chain = torch.nn.Sequential(torch.nn.Linear(d_in, r, bias=False),
                                            torch.nn.Linear(r, l.second.shape[0], bias=False))
            parent, attr = path.split(".")
            setattr(getattr(block, parent), attr, chain)
            state[prefix + ".0.weight"], state[prefix + ".1.weight"] = l.first, l.second
    hf.load_state_dict(state, strict=True, assign=True)
    if model.config["tied_embeddings"]:
        hf.lm_head.weight = hf.model.embed_tokens.weight
    hf.model.rotary_emb = LlamaRotaryEmbedding(hf.config).to(model.embed.device)  # its buffers were on meta
    return hf.eval()


class StepClock(LogitsProcessor):
    """Reads the clock after the forward of call 0 (prefill) and call 1 (first decode step)."""

    def __init__(self, device):
        self.device, self.times = device, []

    def __call__(self, input_ids, scores):
        if len(self.times) < 2:
            self.times.append(harness.clock(self.device))
        else:
            self.times.append(None)  # later steps run unsynchronized, as generate() runs them
        return scores


@torch.inference_mode()
def run(model, prompt, gen, batch, args):
    device = model.embed.device
    hf = hf_model(model)
    ids = torch.tensor([prompt] * batch, device=device)

    def generate(new_tokens):
        clock = StepClock(device)
        t0 = harness.clock(device)
        out = hf.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                          cache_implementation="static", disable_compile=not args.hf_compile,
                          logits_processor=LogitsProcessorList([clock]), attention_mask=torch.ones_like(ids))
        return out[:, ids.shape[1]:], t0, clock.times, harness.clock(device)

    generate(1 + harness.WARMUP_STEPS)  # warm-up
    best = float("inf")
    for _ in range(max(1, args.repeat)):  # prefill: generate's time to the first token
        _, t0, times, _ = generate(1)
        best = min(best, times[0] - t0)
    # gen decode steps after the prefill's token, as flashsvd bench runs them.
    tokens, t0, times, t_end = generate(gen + 1)
    first = (times[1] - times[0]) * 1e3
    return {"prefill_ms": best * 1e3, "first_decode_ms": first,
            "decode_ms_per_token": (t_end - times[1]) * 1e3 / (gen - 1) if gen > 1 else first,
            "tokens": tokens[0, :harness.REPORTED_TOKENS].tolist(), "rows_agree": bool((tokens == tokens[:1]).all()),
            "hf_compile": args.hf_compile,
            "transformers": transformers.__version__}


@torch.inference_mode()
def logits(model, tokens):
    """Logits [vocab] of the last of `tokens` ([T] ids): one eager forward, no cache."""
    return hf_model(model)(tokens[None], use_cache=False, logits_to_keep=1).logits[0, -1]


if __name__ == "__main__":
    harness.main(["hf_static"])
