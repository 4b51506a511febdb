#!/usr/bin/env python3
"""Palu fixture written by the upstream code itself:
tests/fixtures/families/palu/upstream/.

Upstream: github.com/shadowpa0327/Palu at commit
bb22666e2ef96707e8dd21d93fc00146c2e0d615 (2025-02-19). Its compress.py runs
as __main__ (--dump_huggingface_model, fisher rank search, whiten
decomposition, the README's defaults otherwise) on a tiny random LLaMA:
fisher information, per-head-group rank search (rounded to blocks of 32),
whitened head-wise SVD of k_proj/v_proj, save_pretrained (fp16 safetensors)
+ config.json with model_type palullama and head_wise_ranks. The tiny model
has hidden 128 and 4 heads of 32 so that --head_group_size 2 gives two groups
of 64 per k/v, whose ranks (multiples of 32) can differ (intermediate 64
keeps the file small: Palu leaves the MLP dense). The reference
logits come from loading the dumped directory as Palu's evaluation scripts
do (AutoModelForCausalLM once palu.model registered "palullama"), in fp32 so
that only the stored fp16 weights are compared.

Monkeypatched, and only these:
  - calibration text (wikitext2, a download): palu/data_utils.get_calib_data's
    own cache files (cache/wikitext2_<model>_<n>_<seqlen>_3.pt) are written
    beforehand with random token ids.
  - torch.Tensor.cuda returns the tensor itself: the whitening step moves
    its Gram matrices to the GPU for the Cholesky factorization; here it stays on the CPU.
  - fast_hadamard_transform (a CUDA extension, 3rdparty submodule; used only
    for --lt_hadamard latent quantization) is an empty module.
  - torch.manual_seed via compress.py's own --seed (42).

Versions: Python 3.11, torch 2.4.0 (PyPI wheel, CPU), transformers 4.37.2,
accelerate 0.32.1, datasets 2.19.2, loguru 0.7.2, click, einops (pins of
upstream requirements.txt), lm_eval 0.4.3 + peft 0.10.0 (imported only:
run_lm_eval.py; upstream uses its lm-evaluation-harness submodule), sentencepiece.

  python3 -m venv /work/venvs/palu
  /work/venvs/palu/bin/pip install torch==2.4.0 transformers==4.37.2 accelerate==0.32.1 \
      datasets==2.19.2 "pyarrow<17" "pandas<2.3" "numpy<2" loguru==0.7.2 click==8.1.7 \
      einops==0.8.0 sentencepiece protobuf==4.25.1 lm_eval==0.4.3 peft==0.10.0
  /work/venvs/palu/bin/python tests/families/make_upstream_palu_fixture.py [--upstream GIT_DIR]
"""
import os
import runpy
import sys
import types

import upstream_fixture_util as util

COMMIT = "bb22666e2ef96707e8dd21d93fc00146c2e0d615"


def main():
    tree = util.checkout(util.git_dir_arg("shadowpa0327+Palu"), COMMIT, "palu")
    sys.modules["fast_hadamard_transform"] = types.ModuleType("fast_hadamard_transform")
    import torch
    from transformers import AutoModelForCausalLM

    base = util.tiny_llama(os.path.join(tree, "tiny-llama"), hidden_size=128, intermediate_size=64)
    os.chdir(tree)  # compress.py writes cache/ and the dumped model relative to it
    os.makedirs("cache")
    stem = "cache/wikitext2_" + base.replace("/", "_")

    def calibration(n, length, path):
        ids = util.calibration_ids(n, length)
        torch.save([{"input_ids": r[None], "attention_mask": torch.ones_like(r[None])} for r in ids], path)

    calibration(8, 64, f"{stem}_2048_64_3.pt")  # fisher rank search (--calib_seqlen 64)
    calibration(2, 2048, f"{stem}_256_2048_3.pt")  # whitening (its buffer is 2048 tokens long)

    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    sys.argv = ["compress.py", "--model_id", base, "--dump_huggingface_model", "--use_cache", "--device", "cpu",
                "--calib_seqlen", "64", "--head_group_size", "2", "--param_ratio_target", "0.5",
                "--search_method", "fisher", "--decompose_method", "whiten"]
    runpy.run_path(os.path.join(tree, "compress.py"), run_name="__main__")

    import palu.model  # noqa: F401  registers "palullama" with the Auto classes
    saved = os.path.join(tree, "tiny-llama_ratio-0.5_gs-2-fisher-whiten")
    model = AutoModelForCausalLM.from_pretrained(saved, torch_dtype=torch.float32)
    logits = util.logits_of(model)

    util.publish("palu", saved, logits, upstream_commit=COMMIT, head_wise_ranks=model.config.head_wise_ranks)


if __name__ == "__main__":
    main()
