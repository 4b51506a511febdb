# A plain-PyTorch LLaMA decoder over a native model (native.py), shared by the
# dense_kv and gpt_fast peers. Each low-rank linear runs as two matmuls
# (first, then second) for the current tokens only: the KV cache holds dense
# k and v. The two peers differ only in how the cache is addressed:
#   "prefix": the position is a Python int; new k/v are written by slicing and
#             attention reads the valid prefix (the paper's Dense KV-Cache
#             baseline, with SDPA in place of flash_attn_with_kvcache);
#   "masked": the position is a device tensor; new k/v go in with index_copy_
#             and attention reads the whole preallocated cache under a causal
#             mask, so every shape is static and the step can be captured by
#             torch.compile (gpt-fast's design).
# Both take a batch: tokens [B, T], caches [B, kv_heads, max_len, head_dim],
# every row at the same positions (one shared position, the best case for a
# static cache: one mask row and one index_copy_ position serve all rows).
# B = 1 is the same code with a batch dimension of one.
import torch
import torch.nn.functional as F

import native


def linear(x, l):
    if l.second is None:
        return F.linear(x, l.first, l.bias)
    return F.linear(F.linear(x, l.first), l.second, l.bias)


def rmsnorm(x, w, eps):
    # fp32 statistics, as flashsvd and Hugging Face compute them.
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope(x, cos, sin):
    # rotate_half pairs (i, i + head_dim/2), in fp32. x: [B, heads, T, hd]; cos, sin: [T, hd/2].
    xf = x.float()
    a, b = xf.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1).to(x.dtype)


class Decoder(torch.nn.Module):
    def __init__(self, model: native.NativeModel, max_len: int, cache: str, batch: int = 1):
        super().__init__()
        assert cache in ("prefix", "masked")
        self.m, self.c, self.cache = model, model.config, cache
        c, dev, dt = self.c, model.embed.device, model.embed.dtype
        self.gqa = c["kv_heads"] != c["heads"]
        self.inv_freq = native.rope_inv_freq(c, dev)
        shape = (batch, c["kv_heads"], max_len, c["head_dim"])
        self.k_cache = [torch.zeros(shape, device=dev, dtype=dt) for _ in model.layers]
        self.v_cache = [torch.zeros(shape, device=dev, dtype=dt) for _ in model.layers]
        if cache == "masked":
            self.causal = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool, device=dev))

    def attention(self, i, q, k, v, pos):
        T = q.shape[2]
        if self.cache == "prefix":  # pos: int; prefill starts at 0
            self.k_cache[i][:, :, pos:pos + T] = k
            self.v_cache[i][:, :, pos:pos + T] = v
            keys, values = self.k_cache[i][:, :, :pos + T], self.v_cache[i][:, :, :pos + T]
            return F.scaled_dot_product_attention(q, keys, values, is_causal=T > 1, enable_gqa=self.gqa)
        self.k_cache[i].index_copy_(2, pos, k)  # pos: [T] device tensor
        self.v_cache[i].index_copy_(2, pos, v)
        mask = self.causal[pos][None, None]
        return F.scaled_dot_product_attention(q, self.k_cache[i], self.v_cache[i], attn_mask=mask,
                                              enable_gqa=self.gqa)

    def forward(self, tokens, pos):
        """Logits [B, vocab] of the last of `tokens` ([B, T] ids), every row at
        positions pos.. (int, or [T] tensor)."""
        c, eps, hd = self.c, self.c["rms_eps"], self.c["head_dim"]
        B, T = tokens.shape
        positions = pos if torch.is_tensor(pos) else torch.arange(pos, pos + T, device=tokens.device)
        angles = positions.float()[:, None] * self.inv_freq[None, :]
        cos, sin = angles.cos(), angles.sin()
        x = F.embedding(tokens, self.m.embed)  # [B, T, hidden]
        for i, layer in enumerate(self.m.layers):
            L = layer.linears
            h = rmsnorm(x, layer.attn_norm, eps)
            q = linear(h, L["q"]).view(B, T, c["heads"], hd).transpose(1, 2)
            k = linear(h, L["k"]).view(B, T, c["kv_heads"], hd).transpose(1, 2)
            v = linear(h, L["v"]).view(B, T, c["kv_heads"], hd).transpose(1, 2)
            a = self.attention(i, rope(q, cos, sin), rope(k, cos, sin), v, pos)
            x = x + linear(a.transpose(1, 2).reshape(B, T, c["heads"] * hd), L["o"])
            h = rmsnorm(x, layer.mlp_norm, eps)
            x = x + linear(F.silu(linear(h, L["gate"])) * linear(h, L["up"]), L["down"])
        return linear(rmsnorm(x[:, -1], self.m.final_norm, eps), self.m.lm_head)
