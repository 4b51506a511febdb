"""Reference ids of the Llama-2 SentencePiece model for the shared samples.

Writes tests/fixtures/tokenizer/llama2_sentencepiece.json. Needs the pip package
`sentencepiece` and the shared Llama-2 tokenizer.model (path as argument, default
../shared/data/tokenizers/llama2/tokenizer.model beside the checkout).
"""
import os
import sys

import sentencepiece as spm

from samples import MULTILINGUAL, write_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "..", "shared", "data", "tokenizers", "llama2", "tokenizer.model")
    sp = spm.SentencePieceProcessor(model_file=model)
    cases = [{"text": t, "ids": sp.encode(t)} for t in MULTILINGUAL]
    header = {
        "generator": "tests/tokenizer/make_llama2_fixture.py",
        "reference": f"python sentencepiece {spm.__version__}, Llama-2 tokenizer.model, no BOS",
        "bos": sp.bos_id(), "eos": sp.eos_id(), "vocab_size": sp.vocab_size(),
    }
    path = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "llama2_sentencepiece.json")
    write_fixture(path, header, cases)
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
