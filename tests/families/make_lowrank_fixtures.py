#!/usr/bin/env python3
"""Tiny checkpoints in the exact on-disk forms of two low-rank families, with
reference logits computed by PyTorch on the original module structure:

  svd_llm/        SVD-LLM: torch.save({'model': LlamaForCausalLM, 'tokenizer': ...})
                  whose attention/MLP are component.svd_llama.SVD_Llama{Attention,MLP}.
  basis_sharing/  Basis Sharing: Hugging Face directory, ShareLlamaForCausalLM config
                  with layer groups, sharded pytorch_model-*.bin state dicts.

The real repositories are not importable here, so look-alike classes are
registered under the module paths the real checkpoints name (see
docs/checkpoint-formats.md); torch pickles them exactly as it would the real
ones. Needs torch. Run from anywhere:
  python3 tests/families/make_lowrank_fixtures.py
"""
import copy
import json
import math
import os
import sys
import types

import torch
import torch.nn.functional as F
from torch import nn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "families")
TOKENS = [1, 7, 30, 2, 19, 33, 4, 11]


def home(cls, module_path):
    """Makes `cls` importable (and so picklable) as module_path.ClassName."""
    parts = module_path.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    cls.__module__ = module_path
    setattr(sys.modules[module_path], cls.__name__, cls)
    return cls


LLAMA = "transformers.models.llama.modeling_llama"


class LlamaConfig:
    """transformers' PretrainedConfig pickles as its __dict__ (model_type is a class attribute)."""
    model_type = "llama"

    def __init__(self, **fields):
        self.__dict__.update(fields)


home(LlamaConfig, "transformers.models.llama.configuration_llama")


class LlamaTokenizer:
    """Stands in for the tokenizer object SVD-LLM saves next to the model."""

    def __init__(self):
        self.vocab_file = "tokenizer.model"
        self.sp_model_kwargs = {}
        self.serialized_model_proto = b"\x0a\x05hello"
        self.added_tokens_decoder = {0: "<unk>", 1: "<s>", 2: "</s>"}


home(LlamaTokenizer, "transformers.models.llama.tokenization_llama")


class LlamaRMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(size) * 0.3 + 1)
        self.variance_epsilon = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon) * self.weight


class LlamaRotaryEmbedding(nn.Module):
    """Old transformers: inv_freq and cos/sin caches as (non-persistent) buffers."""

    def __init__(self, dim, max_position_embeddings, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_position_embeddings).float()
        emb = torch.cat([torch.outer(t, inv_freq)] * 2, dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x, seq_len):
        # Recomputed in the working dtype so the reference is not limited by cached fp32 tables.
        t = torch.arange(seq_len, dtype=x.dtype)
        emb = torch.cat([torch.outer(t, self.inv_freq.to(x.dtype))] * 2, dim=-1)
        return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def attention(x, q, k, v, o, rotary, n_heads, n_kv, head_dim):
    """Causal GQA attention with rotate_half RoPE; q/k/v/o are callables."""
    T = x.shape[0]
    Q = q(x).view(T, n_heads, head_dim).transpose(0, 1)
    K = k(x).view(T, n_kv, head_dim).transpose(0, 1)
    Vv = v(x).view(T, n_kv, head_dim).transpose(0, 1)
    cos, sin = rotary(x, T)
    Q, K = Q * cos + rotate_half(Q) * sin, K * cos + rotate_half(K) * sin
    rep = n_heads // n_kv
    K, Vv = K.repeat_interleave(rep, 0), Vv.repeat_interleave(rep, 0)
    scores = Q @ K.transpose(1, 2) / math.sqrt(head_dim)
    scores = scores + torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), 1)
    out = (scores.softmax(-1) @ Vv).transpose(0, 1).reshape(T, n_heads * head_dim)
    return o(out)


class LlamaMLP(nn.Module):
    """A dense MLP (a layer the compression left alone)."""

    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaAttention(nn.Module):
    """transformers' dense attention (head_dim from the config; biases per attention_bias)."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_heads = config.num_attention_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", config.hidden_size // self.num_heads)
        h, q, kv = config.hidden_size, self.num_heads * self.head_dim, self.num_key_value_heads * self.head_dim
        self.q_proj = nn.Linear(h, q, bias=config.attention_bias)
        self.k_proj = nn.Linear(h, kv, bias=config.attention_bias)
        self.v_proj = nn.Linear(h, kv, bias=config.attention_bias)
        self.o_proj = nn.Linear(q, h, bias=config.attention_bias)
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, config.max_position_embeddings, config.rope_theta)

    def forward(self, x):
        return attention(x, self.q_proj, self.k_proj, self.v_proj, self.o_proj, self.rotary_emb, self.num_heads,
                         self.num_key_value_heads, self.head_dim)


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, self_attn, mlp):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.self_attn = self_attn
        self.mlp = mlp
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, config, layers):
        super().__init__()
        self.padding_idx = None
        self.vocab_size = config.vocab_size
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(layers)
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config, layers):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config, layers)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, tokens):
        return self.lm_head(self.model(tokens))


for _cls in (LlamaRMSNorm, LlamaRotaryEmbedding, LlamaAttention, LlamaMLP, LlamaDecoderLayer, LlamaModel,
             LlamaForCausalLM):
    home(_cls, LLAMA)


# ---------------------------------------------------------------- SVD-LLM

class SVD_LlamaAttention(nn.Module):
    """SVD-LLM's component/svd_llama.py: each projection split into v (in -> r) then u (r -> out)."""

    def __init__(self, config, ranks):
        super().__init__()
        self.config = config
        self.hidden_size = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.hidden_size // self.num_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.max_position_embeddings = config.max_position_embeddings
        self.ratio = 0.8
        kv = self.num_key_value_heads * self.head_dim
        outs = {"q": self.num_heads * self.head_dim, "k": kv, "v": kv, "o": self.hidden_size}
        ins = {"q": self.hidden_size, "k": self.hidden_size, "v": self.hidden_size, "o": self.num_heads * self.head_dim}
        for name in "qkvo":
            setattr(self, f"{name}_u_proj", nn.Linear(ranks[name], outs[name], bias=False))
            setattr(self, f"{name}_v_proj", nn.Linear(ins[name], ranks[name], bias=False))
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, config.max_position_embeddings, config.rope_theta)

    def forward(self, x):
        f = {n: (lambda y, n=n: getattr(self, f"{n}_u_proj")(getattr(self, f"{n}_v_proj")(y))) for n in "qkvo"}
        return attention(x, f["q"], f["k"], f["v"], f["o"], self.rotary_emb, self.num_heads,
                         self.num_key_value_heads, self.head_dim)


class SVD_LlamaMLP(nn.Module):
    def __init__(self, hidden, inter, ranks):
        super().__init__()
        self.ratio = 0.8
        dims = {"gate": (hidden, inter), "up": (hidden, inter), "down": (inter, hidden)}
        for name in ("gate", "down", "up"):  # SVD-LLM's declaration order
            i, o = dims[name]
            setattr(self, f"{name}_u_proj", nn.Linear(ranks[name], o, bias=False))
            setattr(self, f"{name}_v_proj", nn.Linear(i, ranks[name], bias=False))
        self.act_fn = nn.SiLU()

    def forward(self, x):
        g = self.gate_u_proj(self.gate_v_proj(x))
        u = self.up_u_proj(self.up_v_proj(x))
        return self.down_u_proj(self.down_v_proj(self.act_fn(g) * u))


for _cls in (SVD_LlamaAttention, SVD_LlamaMLP):
    home(_cls, "component.svd_llama")


def llama_config(**extra):
    fields = dict(vocab_size=37, max_position_embeddings=64, hidden_size=16, intermediate_size=22,
                  num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, hidden_act="silu",
                  initializer_range=0.02, rms_norm_eps=1e-5, pretraining_tp=1, use_cache=True,
                  rope_theta=10000.0, rope_scaling=None, attention_bias=False, attention_dropout=0.0,
                  tie_word_embeddings=False, torch_dtype=torch.float16, _name_or_path="jeffwan/llama-7b-hf",
                  architectures=["LlamaForCausalLM"], bos_token_id=1, eos_token_id=2)
    fields.update(extra)
    return LlamaConfig(**fields)


def randomize(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                continue
            # Unit-scale activations (std 1/sqrt(fan-in)), so fp32 rounding stays far below the tolerance.
            p.copy_(torch.randn_like(p) / (1 if "embed" in name else math.sqrt(p.shape[-1])))


def reference_logits(model):
    ref = copy.deepcopy(model).double()
    with torch.no_grad():
        return ref(torch.tensor(TOKENS)).tolist()


def write_reference(directory, logits, **extra):
    with open(os.path.join(directory, "reference.json"), "w") as f:
        json.dump({"tokens": TOKENS, "logits": logits, **extra}, f)


def svd_llm_model():
    config = llama_config()
    # Odd, unequal ranks per matrix and per layer (SVD-LLM v2 allocates them unevenly).
    ranks = [dict(q=5, k=3, v=7, o=5, gate=9, up=7, down=11),
             dict(q=7, k=5, v=3, o=9, gate=5, up=11, down=7)]
    layers = []
    for i in range(config.num_hidden_layers):
        if i < len(ranks):
            attn = SVD_LlamaAttention(config, ranks[i])
            mlp = SVD_LlamaMLP(config.hidden_size, config.intermediate_size, ranks[i])
        else:  # left dense: a partly compressed model
            attn = SVD_LlamaAttention(config, dict(q=16, k=8, v=8, o=16))
            mlp = LlamaMLP(config.hidden_size, config.intermediate_size)
        layers.append(LlamaDecoderLayer(config, attn, mlp))
    model = LlamaForCausalLM(config, layers)
    randomize(model)
    # After the whitening step: factors fp32, embeddings, norms and lm_head fp16.
    model.half()
    for m in model.modules():
        if isinstance(m, (SVD_LlamaAttention, SVD_LlamaMLP, LlamaMLP)):
            m.float()
            if isinstance(m, SVD_LlamaAttention):
                m.rotary_emb.float()
    return model


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/flashsvd_pwned",))


def make_svd_llm():
    out = os.path.join(OUT, "svd_llm")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1)
    model = svd_llm_model()
    name = "llama_whitening_only_0.8.pt"
    torch.save({"model": model, "tokenizer": LlamaTokenizer()}, os.path.join(out, name))
    write_reference(out, reference_logits(model), file=name)

    # Hostile: a parameter that unpickles by calling os.system.
    evil = svd_llm_model()
    evil.model.layers[0].self_attn.q_v_proj._parameters["weight"] = Evil()
    torch.save({"model": evil, "tokenizer": None}, os.path.join(out, "evil_parameter.pt"))
    # A u/v pair whose ranks disagree ([5, 16] then [16, 4]).
    bad = svd_llm_model()
    bad.model.layers[0].self_attn.q_u_proj = nn.Linear(4, 16, bias=False)
    torch.save({"model": bad, "tokenizer": None}, os.path.join(out, "rank_mismatch.pt"))


# ---------------------------------------------------------------- Basis Sharing

SHARED = ["q", "k", "v", "up", "gate"]  # shared by pairs of consecutive layers; o and down private
NUM_BASIS = dict(q=5, k=3, v=7, o=9, up=11, gate=7, down=13)


class ShareLlamaAttention(nn.Module):
    """Basis Sharing: `<m>_basis` (in -> num_basis, shared by the group) then `<m>_proj` (num_basis -> out)."""

    def __init__(self, config, bases):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.head_dim = config.hidden_size // self.num_heads
        kv = self.num_key_value_heads * self.head_dim
        outs = {"q": self.num_heads * self.head_dim, "k": kv, "v": kv, "o": config.hidden_size}
        for name in "qkvo":
            setattr(self, f"{name}_basis", bases[name])
            setattr(self, f"{name}_proj", nn.Linear(NUM_BASIS[name], outs[name], bias=False))
        self.rotary_emb = LlamaRotaryEmbedding(self.head_dim, config.max_position_embeddings, config.rope_theta)

    def forward(self, x):
        f = {n: (lambda y, n=n: getattr(self, f"{n}_proj")(getattr(self, f"{n}_basis")(y))) for n in "qkvo"}
        return attention(x, f["q"], f["k"], f["v"], f["o"], self.rotary_emb, self.num_heads,
                         self.num_key_value_heads, self.head_dim)


class ShareLlamaMLP(nn.Module):
    def __init__(self, config, bases):
        super().__init__()
        h, i = config.hidden_size, config.intermediate_size
        for name, out in (("gate", i), ("up", i), ("down", h)):
            setattr(self, f"{name}_basis", bases[name])
            setattr(self, f"{name}_proj", nn.Linear(NUM_BASIS[name], out, bias=False))
        self.act_fn = nn.SiLU()

    def forward(self, x):
        g = self.gate_proj(self.gate_basis(x))
        u = self.up_proj(self.up_basis(x))
        return self.down_proj(self.down_basis(self.act_fn(g) * u))


def groups_of(n_layers, size):
    return [list(range(s, min(s + size, n_layers))) for s in range(0, n_layers, size)]


def basis_sharing_model(config):
    h, i = config.hidden_size, config.intermediate_size
    q_out = config.num_attention_heads * (h // config.num_attention_heads)
    ins = dict(q=h, k=h, v=h, o=q_out, up=h, gate=h, down=i)
    groups = {m: groups_of(config.num_hidden_layers, 2 if m in SHARED else 1) for m in NUM_BASIS}
    # One Linear object per group, referenced by every member layer (and by model.<m>_basis.<layer>).
    per_layer = [dict() for _ in range(config.num_hidden_layers)]
    for m, gs in groups.items():
        for g in gs:
            basis = nn.Linear(ins[m], NUM_BASIS[m], bias=False)
            for layer in g:
                per_layer[layer][m] = basis
    layers = [LlamaDecoderLayer(config, ShareLlamaAttention(config, b), ShareLlamaMLP(config, b)) for b in per_layer]
    model = LlamaForCausalLM(config, layers)
    for m in NUM_BASIS:
        setattr(model.model, f"{m}_basis", nn.ModuleList([b[m] for b in per_layer]))
    randomize(model)
    return model, groups


def make_basis_sharing():
    out = os.path.join(OUT, "basis_sharing")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(2)
    config = llama_config(architectures=["ShareLlamaForCausalLM"], torch_dtype="float32")
    model, groups = basis_sharing_model(config)
    fields = {k: v for k, v in config.__dict__.items()}
    fields["model_type"] = "llama"
    for m in NUM_BASIS:
        fields[f"{m}_groups"] = groups[m]
        fields[f"num_basis_{m}"] = NUM_BASIS[m]
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(fields, f, indent=2)
    # Two shards, as save_pretrained(safe_serialization=False) writes them; aliases of a basis share storage.
    state = model.state_dict()
    first = [k for k in state if k.startswith("model.embed") or k.startswith("model.layers.0.")
             or k.startswith("model.layers.1.")]
    shards = [first, [k for k in state if k not in first]]
    weight_map = {}
    for n, keys in enumerate(shards):
        name = f"pytorch_model-{n + 1:05d}-of-{len(shards):05d}.bin"
        torch.save({k: state[k] for k in keys}, os.path.join(out, name))
        weight_map.update({k: name for k in keys})
    total = sum(t.numel() * t.element_size() for t in state.values())
    with open(os.path.join(out, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    # What the runtime must hold: each group's basis once, everything else once.
    unique = {id(t.untyped_storage()): t.numel() for t in model.state_dict().values()}
    write_reference(out, reference_logits(model), unique_params=sum(unique.values()))


def write_fuzz_seeds():
    """fuzz/lowrank_families.cpp: the first byte % 4 picks the layout (0 = config.json of a directory, 1 = a model file)."""
    corpus = os.path.join(ROOT, "fuzz", "corpus", "lowrank_families")
    os.makedirs(corpus, exist_ok=True)
    for seed, marker, source in (("basis_sharing_config", b"\x00", "basis_sharing/config.json"),
                                 ("svd_llm_model", b"\x01", "svd_llm/llama_whitening_only_0.8.pt")):
        with open(os.path.join(OUT, source), "rb") as f, open(os.path.join(corpus, seed), "wb") as out:
            out.write(marker + f.read())


def main():
    make_svd_llm()
    make_basis_sharing()
    write_fuzz_seeds()


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":
        # Modules pickle sets of names (non-persistent buffers): fix their order for byte-identical fixtures.
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    main()
