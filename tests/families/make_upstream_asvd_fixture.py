#!/usr/bin/env python3
"""ASVD fixture written by the upstream code itself:
tests/fixtures/families/asvd/upstream/.

Upstream: github.com/hahnyuan/ASVD4LLM at commit
863042743edb4c0dcc512a45534dea07df16b140 (2024-10-22). Its
huggingface_repos/build_asvd_repo.py (the script that built the published
hahnyuan/*-asvd* repositories) runs as __main__ with the options it asserts
(act-aware, alpha 0.5, abs_mean scaling, ppl sensitivity, --use_cache,
target param ratio 0.6) on a tiny random LLaMA: calibration, sensitivity,
binary search of per-layer ranks, SVDLinear, save_pretrained (fp16
safetensors) + config.json with truncation_ranks and auto_map. The
reference logits come from loading that directory the way its README says
(AutoModelForCausalLM, trust_remote_code: upstream's modeling_asvd_llama.py,
copied in by the script), in fp32 so that only the stored fp16 weights are
compared, not fp16 arithmetic.

Monkeypatched, and only these:
  - calibration text (wikitext2, a download): the script's own cache file
    cache/wikitext2_<model>_256_2048_3_bosFalse.pt is written beforehand
    with random token ids, so datautils.get_calib_data loads it.
  - argparse: build_asvd_repo.py's parser lacks --rank_align and
    --compress_kv_cache, which sensitivity.py and binary_search.py read
    (an upstream bug: AttributeError as published); asvd.py's defaults
    (1, False) are filled in.
  - torch.manual_seed(233) (asvd.py's default seed) so svd_lowrank is repeatable.
The upstream .py files the script copies into the directory are left out of the fixture.

Versions: Python 3.11, torch 2.4.0 (PyPI wheel, CPU), transformers 4.41.0,
accelerate 0.25.0, lm_eval 0.3.0 and datasets 2.19.1 (imported only),
sentencepiece, protobuf (upstream requirements.txt pins transformers 4.41.0,
accelerate 0.25.0, lm_eval 0.3.0).

  python3 -m venv /work/venvs/asvd
  /work/venvs/asvd/bin/pip install torch==2.4.0 transformers==4.41.0 accelerate==0.25.0 \
      lm_eval==0.3.0 datasets==2.19.1 "pyarrow<17" "pandas<2.3" "numpy<2" sentencepiece protobuf
  /work/venvs/asvd/bin/python tests/families/make_upstream_asvd_fixture.py [--upstream GIT_DIR]
"""
import argparse
import os
import runpy
import sys

import upstream_fixture_util as util

COMMIT = "863042743edb4c0dcc512a45534dea07df16b140"


def main():
    git_dir = util.git_dir_arg("hahnyuan+ASVD4LLM")
    tree = util.checkout(git_dir, COMMIT, "asvd")
    import torch
    from transformers import AutoModelForCausalLM

    base = util.tiny_llama(os.path.join(tree, "tiny-llama"))
    os.chdir(tree)  # the script writes cache/ and huggingface_repos/<name>-asvd60 relative to it
    os.makedirs("cache")
    ids = util.calibration_ids(8, 64)
    torch.save([{"input_ids": r[None], "attention_mask": torch.ones_like(r[None])} for r in ids],
               f"cache/wikitext2_{base.replace('/', '_')}_256_2048_3_bosFalse.pt")

    parse_args = argparse.ArgumentParser.parse_args

    def with_asvd_defaults(self, *a, **k):
        args = parse_args(self, *a, **k)
        for name, value in (("rank_align", 1), ("compress_kv_cache", False)):
            if not hasattr(args, name):
                setattr(args, name, value)
        return args

    argparse.ArgumentParser.parse_args = with_asvd_defaults
    sys.argv = ["build_asvd_repo.py", "--model_id", base, "--param_ratio_target", "0.6", "--act_aware",
                "--alpha", "0.5", "--n_calib_samples", "8", "--calib_dataset", "wikitext2",
                "--scaling_method", "abs_mean", "--sensitivity_metric", "ppl", "--use_cache"]
    torch.manual_seed(233)
    runpy.run_path(os.path.join(tree, "huggingface_repos", "build_asvd_repo.py"), run_name="__main__")

    saved = os.path.join(tree, "huggingface_repos", "tiny-llama-asvd60")
    model = AutoModelForCausalLM.from_pretrained(saved, trust_remote_code=True, torch_dtype=torch.float32)
    logits = util.logits_of(model)

    util.publish("asvd", saved, logits, upstream_commit=COMMIT, truncation_ranks=model.config.truncation_ranks)


if __name__ == "__main__":
    main()
