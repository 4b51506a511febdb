#!/usr/bin/env python3
"""Tiny checkpoints in the exact on-disk forms of Dobi-SVD and Palu, with
reference logits computed by PyTorch (float64) on the structure each family's
own loader builds:

  dobi_svd/remapping/    the published "remapping" directory: plain LlamaForCausalLM
                         config.json, pytorch_model.bin without attention/MLP (fp16),
                         remapping_weight.pt with 8-bit singular vectors, absmax and
                         fp16 tails of both kinds; some layers rebuilt dense by the
                         size rule.
  dobi_svd/unremapped/   DobiSVD_Model.pt: torch.save({'model', 'tokenizer'}) whose linears
                         are modules.module.SVDTransformLayer (ALinear first, BLinear
                         second), fp16; one linear left dense.
  dobi_svd/bad_remapping/  malformed remapping_weight.pt replacements for the tests.
  palu/                  save_pretrained safetensors, model_type palullama, head_wise_ranks;
                         k_proj/v_proj as VT + per-head-group U.{g}; fp16.

The look-alike LLaMA modules come from make_lowrank_fixtures.py. Needs torch and
safetensors. Run from anywhere:
  python3 tests/families/make_dobi_palu_fixtures.py
"""
import json
import os
import sys

import torch
from safetensors.torch import save, save_file
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_lowrank_fixtures as base  # noqa: E402  (needs the path above)

DOBI = os.path.join(base.OUT, "dobi_svd")
PALU = os.path.join(base.OUT, "palu")
MLP = ("gate_proj", "up_proj", "down_proj")


def module_name(layer, proj):
    return f"model.layers.{layer}.{'mlp' if proj in MLP else 'self_attn'}.{proj}"


def dense_model(config):
    layers = [base.LlamaDecoderLayer(config, base.LlamaAttention(config),
                                     base.LlamaMLP(config.hidden_size, config.intermediate_size))
              for _ in range(config.num_hidden_layers)]
    model = base.LlamaForCausalLM(config, layers)
    base.randomize(model)
    return model


def replace(model, name, module):
    parent, _, attr = name.rpartition(".")
    setattr(model.get_submodule(parent), attr, module)


def svd_factors(weight, rank):
    """us [out, r] = U sqrt(S), vt [r, in] = sqrt(S) V^T of the best rank-r approximation."""
    u, s, vt = torch.linalg.svd(weight.double(), full_matrices=False)
    root = s[:rank].sqrt()
    return u[:, :rank] * root, root[:, None] * vt[:rank]


def write_config(directory, config, **extra):
    fields = dict(config.__dict__, **extra)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({k: (str(v).replace("torch.", "") if isinstance(v, torch.dtype) else v)
                   for k, v in fields.items()}, f, indent=2)


# ---------------------------------------------------------------- Dobi-SVD

class SVDTransformLayer(nn.Module):
    """Dobi-SVD's modules/module.py: ALinear (in -> r) then BLinear (r -> out)."""

    def __init__(self, first, second, name):
        super().__init__()
        self.name = name
        self.ALinear = nn.Linear(first.shape[1], first.shape[0], bias=False, dtype=first.dtype)
        self.BLinear = nn.Linear(second.shape[1], second.shape[0], bias=False, dtype=second.dtype)
        with torch.no_grad():
            self.ALinear.weight.copy_(first)
            self.BLinear.weight.copy_(second)

    def forward(self, x):
        return self.BLinear(self.ALinear(x))


base.home(SVDTransformLayer, "modules.module")


def dynamic_code():
    """bitsandbytes create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8), as it computes it."""
    data = []
    for e in range(7):
        bounds = torch.linspace(0.1, 1, 2 ** e + 1, dtype=torch.float32)
        means = (bounds[:-1] + bounds[1:]) / 2.0
        data += ((10 ** (e - 6)) * means).tolist()
        data += (-(10 ** (e - 6)) * means).tolist()
    data += [0.0, 1.0]
    return torch.tensor(sorted(data), dtype=torch.float32)


CODE = dynamic_code()


def quantize_rows(rows):
    """Per row: fp16 absmax and the nearest code index of each value / absmax (bitsandbytes' blockwise rule)."""
    absmax = rows.abs().amax(1).half()
    scaled = rows / absmax.double()[:, None]
    codes = (scaled[..., None] - CODE.double()).abs().argmin(-1).to(torch.uint8)
    return codes, absmax


def remap_entry(us, vt):
    """Dobi-SVD's remapping of W = us [m, k] . vt [k, n]: k singular vectors of length min(m, n) per factor
    in 8 bits, the rest of the longer factor as an fp16 tail."""
    m, n = us.shape[0], vt.shape[1]
    length = min(m, n)
    us_quan, us_absmax = quantize_rows(us[:length].T)
    vt_quan, vt_absmax = quantize_rows(vt[:, :length])
    # torch.save keeps a view's strides, and SVD factors are column-major: store the tails row-major.
    tail = ("us", us[length:].half().contiguous()) if m > n else ("vt", vt[:, length:].half().contiguous()) \
        if m < n else None
    return dict(us_quan=us_quan.contiguous(), vt_quan=vt_quan, us_absmax=us_absmax, vt_absmax=vt_absmax,
                tuple_info=tail)


def dequantize(entry):
    """What Dobi-SVD's DOBI_dequantize yields (before its fp16 cast), in float64."""
    code = CODE.double()
    us = code[entry["us_quan"].long()].T * entry["us_absmax"].double()
    vt = entry["vt_absmax"].double()[:, None] * code[entry["vt_quan"].long()]
    tail = entry["tuple_info"]
    if tail is not None and tail[0] == "us":
        us = torch.cat((us, tail[1].double()), 0)
    if tail is not None and tail[0] == "vt":
        vt = torch.cat((vt, tail[1].double()), 1)
    return us, vt


# Odd, unequal ranks. For W = m x n Dobi keeps factors only when m*n > k*(m+n): here q/o [16x16] need
# k < 8, k/v [8x16] k <= 5, gate/up [22x16] and down [16x22] k <= 9; the others are rebuilt dense.
# gate/up (22 > 16) carry a "us" tail, k/v/down (out < in) a "vt" tail, q/o none.
REMAP_RANKS = [dict(q_proj=5, k_proj=3, v_proj=7, o_proj=9, gate_proj=7, up_proj=11, down_proj=5),
               dict(q_proj=3, k_proj=5, v_proj=1, o_proj=7, gate_proj=9, up_proj=3, down_proj=13)]


def make_dobi_remapping():
    out = os.path.join(DOBI, "remapping")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(5)
    config = base.llama_config(num_hidden_layers=2, torch_dtype="float16",
                               _name_or_path="meta-llama/Llama-2-7b-hf")
    model = dense_model(config)
    model.half()
    remapping = {}
    for i, ranks in enumerate(REMAP_RANKS):
        for proj, rank in ranks.items():
            name = module_name(i, proj)
            remapping[name] = remap_entry(*svd_factors(model.get_submodule(name).weight, rank))
    state = {k: v for k, v in model.state_dict().items() if "self_attn." not in k and "mlp." not in k}
    torch.save(state, os.path.join(out, "pytorch_model.bin"))
    torch.save(remapping, os.path.join(out, "remapping_weight.pt"))
    write_config(out, config, model_type="llama")
    # The reference: Dobi-SVD's loader's structure, factors kept or multiplied out by its size rule.
    ref = model.double()
    for name, entry in remapping.items():
        us, vt = dequantize(entry)
        m, n, rank = us.shape[0], vt.shape[1], vt.shape[0]
        if m * n > rank * (m + n):
            replace(ref, name, SVDTransformLayer(vt, us, name))
        else:
            ref.get_submodule(name).weight.data = us @ vt
    base.write_reference(out, base.reference_logits(ref))
    return remapping


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/flashsvd_pwned",))


def make_dobi_bad_remapping(remapping):
    """Replacements for remapping_weight.pt, each wrong in the first module the loader reads (or the second)."""
    out = os.path.join(DOBI, "bad_remapping")
    os.makedirs(out, exist_ok=True)
    q, k = module_name(0, "q_proj"), module_name(0, "k_proj")
    good_q, good_k = remapping[q], remapping[k]

    def write(case, entries):
        torch.save(entries, os.path.join(out, case + ".pt"))

    write("evil", {q: dict(good_q, us_absmax=Evil())})
    write("missing_module", {k: good_k})
    write("code_table_size", {q: dict(good_q, us_quan=good_q["us_quan"][:, :-1].contiguous())})
    write("rank_disagrees", {q: dict(good_q, vt_quan=good_q["vt_quan"][:-1].contiguous())})
    write("tail_on_square", {q: dict(good_q, tuple_info=("us", torch.zeros(3, 5, dtype=torch.float16)))})
    write("tail_wrong_kind", {q: good_q, k: dict(good_k, tuple_info=("us", good_k["tuple_info"][1]))})
    write("tail_wrong_shape", {q: good_q, k: dict(good_k, tuple_info=("vt", torch.zeros(3, 9, dtype=torch.float16)))})
    write("tail_missing", {q: good_q, k: dict(good_k, tuple_info=None)})


UNREMAPPED_RANKS = [dict(q_proj=5, k_proj=3, v_proj=7, o_proj=9, gate_proj=7, up_proj=11, down_proj=5),
                    dict(q_proj=7, k_proj=5, o_proj=3, gate_proj=9, up_proj=3, down_proj=13)]  # v_proj dense


def make_dobi_unremapped():
    out = os.path.join(DOBI, "unremapped")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(6)
    config = base.llama_config(num_hidden_layers=2, torch_dtype=torch.float16)
    model = dense_model(config)
    for i, ranks in enumerate(UNREMAPPED_RANKS):
        for proj, rank in ranks.items():
            name = module_name(i, proj)
            us, vt = svd_factors(model.get_submodule(name).weight, rank)
            replace(model, name, SVDTransformLayer(vt.float(), us.float(), name))
    model.half()
    torch.save({"model": model, "tokenizer": base.LlamaTokenizer()}, os.path.join(out, "DobiSVD_Model.pt"))
    base.write_reference(out, base.reference_logits(model))


# ---------------------------------------------------------------- Palu

class HeadwiseLowRankModule(nn.Module):
    """Palu's modules/svd_linear.py: VT (in -> sum r_g) then, per head group g, U[g] (r_g -> group_dim)."""

    def __init__(self, ranks, in_features, out_features):
        super().__init__()
        self.ranks = ranks
        self.group_dim = out_features // len(ranks)
        self.VT = nn.Linear(in_features, sum(ranks), bias=False)
        self.U = nn.ModuleList([nn.Linear(r, self.group_dim, bias=False) for r in ranks])

    def forward(self, x):
        latents = self.VT(x)
        return torch.cat([u(part) for u, part in zip(self.U, latents.split(self.ranks, -1))], -1)

    @staticmethod
    def from_linear(linear, ranks):
        """Per head group, the truncated SVD of that group's rows (Palu's group-wise decomposition)."""
        module = HeadwiseLowRankModule(ranks, linear.in_features, linear.out_features)
        vts = []
        for g, rank in enumerate(ranks):
            us, vt = svd_factors(linear.weight[g * module.group_dim:(g + 1) * module.group_dim], rank)
            module.U[g].weight.data = us.float()
            vts.append(vt.float())
        module.VT.weight.data = torch.cat(vts, 0)
        return module


# Per-head groups (group_dim 4: 2 groups per k/v of 2 KV heads) with unequal ranks; layer 2 keeps one
# group of both heads for k_proj and leaves v_proj dense.
PALU_RANKS = {"model.layers.0.self_attn.k_proj": [3, 2], "model.layers.0.self_attn.v_proj": [4, 1],
              "model.layers.1.self_attn.k_proj": [1, 3], "model.layers.1.self_attn.v_proj": [2, 2],
              "model.layers.2.self_attn.k_proj": [5]}


def make_palu():
    os.makedirs(PALU, exist_ok=True)
    torch.manual_seed(7)
    config = base.llama_config(torch_dtype="float16", architectures=["PaluLlamaForCausalLM"])
    model = dense_model(config)
    for name, ranks in PALU_RANKS.items():
        replace(model, name, HeadwiseLowRankModule.from_linear(model.get_submodule(name), ranks))
    model.half()
    write_config(PALU, config, model_type="palullama", head_wise_ranks=PALU_RANKS)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(PALU, "model.safetensors"), metadata={"format": "pt"})
    base.write_reference(PALU, base.reference_logits(model))
    return state


def write_fuzz_seeds(palu_state):
    """fuzz/lowrank_families.cpp: marker 1 = a model file; 2 = config.json, NUL, model.safetensors;
    3 = config.json, NUL, remapping_weight.pt."""
    corpus = os.path.join(base.ROOT, "fuzz", "corpus", "lowrank_families")
    os.makedirs(corpus, exist_ok=True)

    def read(*path):
        with open(os.path.join(*path), "rb") as f:
            return f.read()

    remap = os.path.join(DOBI, "remapping")
    seeds = {"dobi_svd_unremapped": b"\x01" + read(DOBI, "unremapped", "DobiSVD_Model.pt"),
             "dobi_svd_remapping_dir": b"\x03" + read(remap, "config.json") + b"\x00" +
             read(remap, "remapping_weight.pt"),
             "palu_dir": b"\x02" + read(PALU, "config.json") + b"\x00" + save(palu_state)}
    for name, data in seeds.items():
        with open(os.path.join(corpus, name), "wb") as f:
            f.write(data)


def main():
    make_dobi_bad_remapping(make_dobi_remapping())
    make_dobi_unremapped()
    write_fuzz_seeds(make_palu())


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":
        # Modules pickle sets of names (non-persistent buffers): fix their order for byte-identical fixtures.
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    main()
