#!/usr/bin/env python3
"""An SVD-LLM checkpoint written by SVD-LLM's own code, with PyTorch's logits.

Unlike the look-alikes of make_lowrank_fixtures.py, everything here is the
real thing, run on the CPU: a tiny random LlamaForCausalLM saved with
save_pretrained and a tiny SentencePiece model (no tokenizer_config.json, so
the tokenizer's model_max_length is transformers' int(1e30)) are loaded by
SVD-LLM's get_model_from_huggingface, whitened and truncated by its
profle_svdllm and whitening, and saved as SVDLLM.py saves them:
torch.save({'model': model, 'tokenizer': tokenizer}, ...).

The config's rope_theta is 500000, but SVD_LlamaAttention builds its rotary
embedding with the default base 10000: the saved model computes with 10000,
and its inv_freq buffers say so.

Writes, in tests/fixtures/families/svd_llm/:
  tiny_llama_whitening_only_0.4.pt  the checkpoint (SVDLLM.py's file name)
  upstream_reference.json           token ids and the logits of the saved model,
                                    reloaded by SVD-LLM's get_model_from_local and
                                    run by PyTorch in float64
and the fuzz seeds fuzz/corpus/pickle/{svd_llm_upstream,big_ints}.pkl.

Made with SVD-LLM at commit 1c1009a99bea54c22c27a4dd5d9fba7116dc456b and its
pins where they install on Python 3.11: torch 2.4.0 (CPU), transformers
4.35.2, tokenizers 0.15.2, sentencepiece 0.1.99, accelerate 0.25.0,
datasets 2.16.1 (imported by SVDLLM.py, unused), numpy 1.26.3:
  git clone https://github.com/AIoT-MLSys-Lab/SVD-LLM /tmp/svd-llm-src
  python3 tests/families/make_svd_llm_upstream_fixture.py /tmp/svd-llm-src
"""
import json
import os
import pickle
import sys
import tempfile
import zipfile

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "families", "svd_llm")
SEEDS = os.path.join(ROOT, "fuzz", "corpus", "pickle")
MODEL_ID = "tiny-llama"  # SVD-LLM picks its LLaMA code paths by "llama" in the name
RATIO = 0.4  # kept fraction of each matrix's parameters
TEXT = "The quick brown fox jumps over the lazy dog while low rank factors keep the model small."


def train_tokenizer(directory):
    """A 96-piece SentencePiece model (LLaMA's ids: unk 0, bos 1, eos 2) trained on this repo's docs."""
    import sentencepiece as spm

    lines = []
    for doc in ("README.md", "docs/architecture.md"):
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            lines += [line.strip() for line in f if line.strip()]
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=os.path.join(directory, "tokenizer"),
                                   vocab_size=96, model_type="bpe", normalization_rule_name="identity",
                                   unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, minloglevel=2)


def save_tiny_llama(directory, vocab):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    # SVD_LlamaAttention has no grouped-query path, so every head has its own k/v.
    config = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                         rope_theta=500000.0, rms_norm_eps=1e-5, initializer_range=0.15, tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
    model.save_pretrained(directory)


def calibration_batches(tokenizer):
    """Enough tokens for every linear's input Gram matrix to be positive definite."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        ids = tokenizer(f.read(), return_tensors="pt").input_ids[0]
    seq = 48
    return [{"input_ids": ids[i:i + seq][None], "attention_mask": torch.ones(1, seq, dtype=torch.long)}
            for i in range(0, 8 * seq, seq)]


def big_int_seed():
    """Ints past 64 bits in each encoding: LONG1, LONG4 and the text LONG."""
    values = [int(1e30), -2 ** 80, 2 ** 63, 2 ** 2100, -(2 ** 63)]
    body = b"".join(pickle.dumps(v, protocol=2)[2:-1] for v in values)
    return b"\x80\x02](" + body + b"L" + str(10 ** 30).encode() + b"L\ne."


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    import SVDLLM
    from utils.model_utils import get_model_from_huggingface, get_model_from_local

    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = os.path.join(tmp, MODEL_ID)
        os.makedirs(hf_dir)
        train_tokenizer(hf_dir)
        save_tiny_llama(hf_dir, vocab=96)
        model, tokenizer = get_model_from_huggingface(hf_dir)
    assert tokenizer.model_max_length == int(1e30), tokenizer.model_max_length
    model.eval()
    profiling_mat = SVDLLM.profle_svdllm(MODEL_ID, model, calibration_batches(tokenizer), "cpu")
    SVDLLM.whitening(MODEL_ID, model, profiling_mat, RATIO, "cpu")
    name = MODEL_ID.replace("/", "_").replace("-", "_") + "_whitening_only_" + str(RATIO) + ".pt"
    path = os.path.join(OUT, name)
    torch.save({"model": model, "tokenizer": tokenizer}, path)

    model, _ = get_model_from_local(path)
    for layer in model.model.layers:
        dim = layer.self_attn.head_dim
        expected = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        assert torch.equal(layer.self_attn.rotary_emb.inv_freq, expected), "SVD-LLM no longer ignores rope_theta"
    tokens = tokenizer(TEXT).input_ids[:12]
    # transformers 4.35 builds its causal mask with torch.full in the default dtype.
    torch.set_default_dtype(torch.float64)
    with torch.no_grad():
        logits = model.double()(torch.tensor([tokens])).logits[0]
    with open(os.path.join(OUT, "upstream_reference.json"), "w") as f:
        json.dump({"tokens": tokens, "logits": logits.tolist()}, f)
        f.write("\n")

    with zipfile.ZipFile(path) as zf:
        pkl = zf.read(next(n for n in zf.namelist() if n.endswith("/data.pkl")))
    with open(os.path.join(SEEDS, "svd_llm_upstream.pkl"), "wb") as f:
        f.write(pkl)
    with open(os.path.join(SEEDS, "big_ints.pkl"), "wb") as f:
        f.write(big_int_seed())
    print(f"{path}: {os.path.getsize(path)} bytes, data.pkl {len(pkl)} bytes, tokens {tokens}")


if __name__ == "__main__":
    main()
