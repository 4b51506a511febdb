# Reads a flashsvd native model directory (model.safetensors + flashsvd.json,
# written by `flashsvd convert`, see src/families/native_manifest.h) into
# torch tensors, so every peer runs the very weights flashsvd runs.
#
# Layout as stored: q/k rows in rotate_half (Hugging Face) order; a low-rank
# linear is y = second @ (first @ x) with first [r, in] and second [out, r];
# a dense one has only first [out, in]. The first factors of q|k|v and of
# gate|up are row ranges of one packed tensor each; here they become views of
# it (no copy), which the peers use as separate matrices.
import json
import os
from dataclasses import dataclass, field

import torch
from safetensors import safe_open

LINEARS = ("q", "k", "v", "o", "gate", "up", "down")


@dataclass
class Linear:
    first: torch.Tensor                  # [r, in] (low-rank) or [out, in] (dense)
    second: torch.Tensor | None = None   # [out, r]; None: dense
    bias: torch.Tensor | None = None     # [out]

    @property
    def rank(self):
        return None if self.second is None else self.first.shape[0]


@dataclass
class Layer:
    attn_norm: torch.Tensor
    mlp_norm: torch.Tensor
    linears: dict = field(default_factory=dict)  # name in LINEARS -> Linear


@dataclass
class NativeModel:
    path: str
    config: dict      # flashsvd.json's "config" (hidden, heads, kv_heads, head_dim, rope_theta, ...)
    provenance: dict
    embed: torch.Tensor
    final_norm: torch.Tensor
    lm_head: Linear
    layers: list


def load(path, device="cuda", dtype=torch.bfloat16):
    """The model in `path` on `device`; every tensor (norms too) in `dtype`."""
    with open(os.path.join(path, "flashsvd.json")) as f:
        manifest = json.load(f)
    if manifest.get("format") != "flashsvd-native" or manifest.get("version") != 1:
        raise ValueError(f"{path}: not a flashsvd-native version 1 directory")
    cache = {}  # each stored tensor once, so shared factors stay shared
    with safe_open(os.path.join(path, "model.safetensors"), framework="pt", device=str(device)) as f:
        def tensor(name):
            if not name:
                return None
            if name not in cache:
                cache[name] = f.get_tensor(name).to(dtype)
            return cache[name]

        def linear(entry):
            first = tensor(entry["first"])
            if "rows" in entry:
                begin, end = entry["rows"]
                first = first[begin:end]
            return Linear(first, tensor(entry.get("second")), tensor(entry.get("bias")))

        layers = [Layer(tensor(l["attn_norm"]), tensor(l["mlp_norm"]), {n: linear(l[n]) for n in LINEARS})
                  for l in manifest["layers"]]
        return NativeModel(path, manifest["config"], manifest.get("provenance", {}), tensor(manifest["embed"]),
                           tensor(manifest["final_norm"]), linear(manifest["lm_head"]), layers)


def rope_inv_freq(config, device):
    """RoPE inverse frequencies for pairs (i, i + head_dim/2), llama3 scaling applied (model/config.h)."""
    hd = config["head_dim"]
    inv = 1.0 / (config["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64, device=device) / hd))
    s = config["rope_scaling"]
    if s["type"] == "llama3":
        low_wavelen = s["original_max_position"] / s["low_freq_factor"]
        high_wavelen = s["original_max_position"] / s["high_freq_factor"]
        wavelen = 2 * torch.pi / inv
        smooth = (s["original_max_position"] / wavelen - s["low_freq_factor"]) / (
            s["high_freq_factor"] - s["low_freq_factor"])
        scaled = torch.where(wavelen > low_wavelen, inv / s["factor"], inv)
        mid = (wavelen <= low_wavelen) & (wavelen >= high_wavelen)
        inv = torch.where(mid, (1 - smooth) * inv / s["factor"] + smooth * inv, scaled)
    elif s["type"] != "none":
        raise ValueError(f"rope_scaling type {s['type']!r} is not supported here")
    return inv.float()
