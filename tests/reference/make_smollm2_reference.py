"""Reference outputs of SmolLM2-135M-Instruct (Q4_1 GGUF) from Hugging Face
transformers, for tests/apps/smollm2_reference_test.cpp.

Runs on the GPU machine (PyTorch + transformers there; the `gguf` package is
carried as a wheel). transformers dequantizes the GGUF to fp32 and un-permutes
q/k itself, so it is an independent reference for our loader, tokenizer, chat
template and fp32 forward pass.

Stored per prompt: the token ids, and for every position the logits at a
fixed set of vocabulary indices (128 drawn once with a fixed seed, plus that
position's top 16) — enough for a relative-error check without committing
megabytes; plus the greedy continuation of 32 tokens: plain argmax of a full
forward per step, with no stop tokens and no suppression (generate()'s
min_new_tokens would mask EOS and change the sequence).

usage: python3 make_smollm2_reference.py MODEL.gguf OUT.json
"""
import json
import os
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPTS = [
    {"text": "The capital of France is"},
    {"text": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"},
    {"text": "Ünïcödé, 日本語, emoji 🚀 and numbers 1234567: mixed input."},
    {"chat": [{"role": "user", "content": "What is the tallest mountain on Earth?"}]},
    {"chat": [{"role": "system", "content": "You answer in one short sentence."},
              {"role": "user", "content": "Why is the sky blue?"}]},
]
N_RANDOM, N_TOP, N_GREEDY = 128, 16, 32


def main(gguf_path, out_path):
    folder, name = os.path.split(os.path.abspath(gguf_path))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32)
    model = model.to("cuda").eval()
    vocab = model.config.vocab_size
    rng = np.random.default_rng(1234)
    random_ids = sorted(rng.choice(vocab, N_RANDOM, replace=False).tolist())
    cases = []
    for prompt in PROMPTS:
        if "chat" in prompt:
            ids = tok.apply_chat_template(prompt["chat"], add_generation_prompt=True, tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            text = tok.apply_chat_template(prompt["chat"], add_generation_prompt=True, tokenize=False)
        else:
            text = prompt["text"]
            ids = tok(text, add_special_tokens=True)["input_ids"]
        ids = [int(i) for i in ids]
        x = torch.tensor([ids], device="cuda")
        with torch.no_grad():
            logits = model(x).logits[0].double().cpu().numpy()
            seq = x
            for _ in range(N_GREEDY):
                nxt = model(seq).logits[0, -1].argmax()
                seq = torch.cat([seq, nxt.view(1, 1)], dim=1)
        positions = []
        for row in logits:
            top = np.argsort(-row)[:N_TOP].tolist()
            idx = sorted(set(random_ids) | set(top))
            positions.append({"ids": idx, "logits": [float(row[i]) for i in idx], "argmax": int(top[0])})
        cases.append({**prompt, "formatted": text, "tokens": ids, "positions": positions,
                      "greedy": [int(t) for t in seq[0, len(ids):].tolist()],
                      "greedy_text": tok.decode(seq[0, len(ids):])})
        print(f"{len(ids)} tokens, greedy: {cases[-1]['greedy_text']!r}", file=sys.stderr)
    meta = {"model": name, "transformers": __import__("transformers").__version__,
            "torch": torch.__version__, "device": torch.cuda.get_device_name(),
            "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id}
    with open(out_path, "w") as f:
        json.dump({"meta": meta, "cases": cases}, f, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
