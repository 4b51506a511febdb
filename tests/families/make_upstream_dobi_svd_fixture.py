#!/usr/bin/env python3
"""Dobi-SVD remapping fixture written by the upstream code itself:
tests/fixtures/families/dobi_svd/upstream/.

Upstream: github.com/wangqinsi1/Dobi-SVD at commit
220ab55026dccfa520b68130d8ce88736a24e055 (2025-10-18). Its weight_updater.py
runs as __main__ with --remapping (the step that writes the published
DobiSVD-<model>-<ratio> directories): IPCA weight update driven by the
per-layer truncation positions of a training result, then DOBI_quantize
(8-bit remapping of U·S and Vᵀ with bitsandbytes' dynamic code table, fp16
tails) into remapping_weight.pt, plus config.json, tokenizer and a
pytorch_model.bin without attention/MLP tensors. The training result
(para_config.json + best_gamma.json under results/training_output/, the
output of the hours-long svd_trainer.py) is written here for the tiny model,
in the layout of the ones upstream ships; the truncation positions are
chosen so that most linears stay factorized and v_proj is rebuilt dense by
the loader (k·(in+out) >= in·out). The reference logits come from upstream's
own loader, modelutils.load_remapping_model, computed in fp32 (it rounds
the dequantized factors to fp16, as published).

Monkeypatched, and only these (no GPU here):
  - whatever upstream sends to "cuda" (torch.device('cuda:0'), .cuda(),
    .to("cuda"), nn.Linear(device="cuda")) stays on the CPU.
  - bitsandbytes' quantize_no_absmax / dequantize_no_absmax are CUDA-only
    kernels in 0.44.1 (lib.cquantize / lib.cdequantize); replaced by their CPU
    equivalents: the index of the nearest code (ties to the lower), and a
    table lookup. The code table itself is bnb's create_dynamic_map().
  - calibration text (wikitext2, a download): utils/datautils.py's own cache
    files (datasets/wikitext2/{train,val}data.pt and
    data_cache/wikitext2/{train,val}data_wikitext2_<n>_<seq>.pt) are written
    beforehand with random token ids.

Versions: Python 3.11, torch 2.4.0 (PyPI wheel, CPU; upstream pins 2.1.2),
transformers 4.37.2, accelerate 0.26.0, bitsandbytes 0.44.1 (upstream pins),
datasets 2.19.2 (imported only), sentencepiece, protobuf.

  python3 -m venv /work/venvs/dobi
  /work/venvs/dobi/bin/pip install torch==2.4.0 transformers==4.37.2 accelerate==0.26.0 \
      bitsandbytes==0.44.1 datasets==2.19.2 "pyarrow<17" "pandas<2.3" "numpy<2" sentencepiece protobuf
  /work/venvs/dobi/bin/python tests/families/make_upstream_dobi_svd_fixture.py [--upstream GIT_DIR]
"""
import json
import os
import runpy
import sys

import upstream_fixture_util as util

COMMIT = "220ab55026dccfa520b68130d8ce88736a24e055"
SEQ_LEN = 32
# Truncation positions (best_gamma.json). v_proj (64x64): 40*(64+64) >= 64*64, so the loaders rebuild it dense.
GAMMA = {"self_attn.q_proj": 12, "self_attn.k_proj": 9, "self_attn.v_proj": 40, "self_attn.o_proj": 14,
         "mlp.gate_proj": 20, "mlp.up_proj": 18, "mlp.down_proj": 22}


def keep_on_cpu():
    import torch

    def cpu(d):
        return "cpu" if (isinstance(d, str) and d.startswith("cuda")) or getattr(d, "type", None) == "cuda" else d

    def redirect(method):
        def to(self, *args, **kwargs):
            args = [cpu(a) for a in args]
            if "device" in kwargs:
                kwargs["device"] = cpu(kwargs["device"])
            return method(self, *args, **kwargs)
        return to

    torch.Tensor.to = redirect(torch.Tensor.to)
    torch.nn.Module.to = redirect(torch.nn.Module.to)
    torch.Tensor.cuda = lambda self, *a, **k: self
    linear_init = torch.nn.Linear.__init__
    torch.nn.Linear.__init__ = lambda self, *a, device=None, **k: linear_init(self, *a, device=cpu(device), **k)

    import bitsandbytes.functional as F

    def quantize_no_absmax(A, code, out=None):
        return (A.float().reshape(-1, 1) - code.float()).abs().argmin(dim=1).to(torch.uint8).reshape(A.shape)

    F.quantize_no_absmax = quantize_no_absmax
    F.dequantize_no_absmax = lambda A, code, out=None: code.float()[A.long()]


def main():
    tree = util.checkout(util.git_dir_arg("wangqinsi1+Dobi-SVD"), COMMIT, "dobi_svd")
    keep_on_cpu()
    import torch

    base = util.tiny_llama(os.path.join(os.path.dirname(tree), "tiny-llama"))
    os.chdir(tree)  # data_cache/, datasets/ and results/ are relative to it
    trained = os.path.join("results", "training_output", "tiny-llama", "Diff-Remapping-0.4_wikitext2_32")
    os.makedirs(trained)
    with open(os.path.join(trained, "para_config.json"), "w") as f:
        json.dump({"model_id": "tiny-llama", "DATASET_NAME": "wikitext2", "target_compression_ratio": 0.4, "BETA": 10,
                   "dataset_processing": {"SEED": 0, "SEQ_LEN": SEQ_LEN, "NSAMPLES_train": 8, "NSAMPLES_val": 2},
                   "dtype_settings": {"model_load_dtype": "f16", "computeSVD_dtype": "f32"},
                   "no_svd_layer": ["lm_head"]}, f, indent=4)
    with open(os.path.join(trained, "best_gamma.json"), "w") as f:
        json.dump({f"model.layers.{i}.{name}": float(g) for i in range(2) for name, g in GAMMA.items()}, f, indent=4)
    os.makedirs("datasets/wikitext2")
    os.makedirs("data_cache/wikitext2")
    for split in ("train", "val"):
        torch.save([], f"datasets/wikitext2/{split}data.pt")  # raw text: unused once tokenized data is cached
    for split, n in (("train", 8), ("val", 2)):
        rows = util.calibration_ids(n, SEQ_LEN, seed=1 if split == "train" else 2)
        torch.save([{"input_ids": r, "attention_mask": torch.ones_like(r)} for r in rows],
                   f"data_cache/wikitext2/{split}data_wikitext2_{n}_{SEQ_LEN}.pt")

    sys.argv = ["weight_updater.py", "--model_id", base, "--training_result_path", os.path.basename(trained),
                "--seed", "0", "--n_train_samples", "8", "--n_eval_samples", "2", "--remapping"]
    runpy.run_path(os.path.join(tree, "weight_updater.py"), run_name="__main__")

    saved = os.path.join(tree, "results", "compressed_model", "tiny-llama", "DobiSVD-tiny-llama-0.4")
    from modelutils import load_remapping_model
    model, _ = load_remapping_model(saved)
    logits = util.logits_of(model)

    util.publish("dobi_svd", saved, logits, upstream_commit=COMMIT, gamma=GAMMA)


if __name__ == "__main__":
    main()
