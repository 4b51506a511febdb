"""A tiny RoBERTa-style tokenizer and its reference ids, by Hugging Face `tokenizers`.

With --retrain (or when it is missing), trains a byte-level BPE of 600 tokens on
this repository's docs/*.md with RoBERTa's special tokens (<s> 0, <pad> 1,
</s> 2, <unk> 3, <mask> 4; <mask> lstrip as roberta-base's),
ByteLevel(add_prefix_space=false) and RobertaProcessing, and writes it to
tests/fixtures/tokenizer/roberta_bpe_tokenizer.json; otherwise reuses that file
(retraining on changed docs gives a different, equally valid, fixture).
Writes tests/fixtures/tokenizer/roberta_bpe.json: per text the ids without
specials, also with add_prefix_space=true, and `<s> A </s></s> B </s>` pairs
with token types under longest-first truncation. When `transformers` is
installed, checks that its RobertaTokenizerFast built from the same vocab.json +
merges.txt (no tokenizer.json) gives the same ids, as the C++ test expects.
Also writes tests/fixtures/tokenizer/roberta_bpe_cases.json (make_roberta_cases.py):
added tokens' single_word / lstrip / rstrip / normalized, vocab.json directories
with extra added tokens as transformers' AutoTokenizer loads them, and
TemplateProcessing post-processors (also on a small WordPiece tokenizer).
Needs the pip packages `tokenizers` (0.20.3) and, for the directories, `transformers` (4.46.3).
"""
import glob
import json
import os
import sys
import tempfile

from tokenizers import ByteLevelBPETokenizer, Tokenizer

import make_roberta_cases
from samples import MULTILINGUAL, write_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]

EXTRA = [
    "Café naïve résumé coöperate Ångström façade",
    "한국어 텍스트와 漢字 混合 ㄱㄴㄷ",
    "new emoji 🥰 🫠 🧑‍💻 ©®™ and flags 🇫🇷🇯🇵",
    " leading space",
    "   three leading spaces",
    "a\n\n\n\nb\r\n\r\nc   \n  d",
    "\t\t  \u00a0nbsp\u3000ideographic space\u2009thin",
    "The capital of France is <mask>.",
    "spaces before   <mask> and after <mask>   end",
    "nbsp\u00a0<mask> ideographic\u3000<mask>",
    "<s>literal specials</s> inside<pad>text <unk> <s",
    "hello</s></s>world<mask><mask>",
    "flashsvd compress -m ENCODER --ratio 0.6 -o OUT --calib TEXT",
    "low-rank SVD factors: W ≈ U Σ Vᵀ, rank 64 of 768",
    "supercalifragilisticexpialidocious " + "a" * 120,
    "",
]

PAIRS = [
    ("How old are you?", "I am six years old.", 0),
    ("A man is playing a guitar.", "Someone plays music on an instrument, loudly and happily.", 14),
    ("one two three four five six", "seven eight", 10),
    ("alpha beta", "gamma delta epsilon zeta eta theta", 10),
    ("a b c", "d e f", 9),
    ("Grüße aus München", "我们今天去公园散步", 12),
    ("single long sentence with many words to cut", None, 6),
    ("emoji 🥰 cut in the middle of its bytes", None, 5),
]


def train(path):
    t = ByteLevelBPETokenizer(add_prefix_space=False)
    t.train(sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))), vocab_size=600, min_frequency=2,
            special_tokens=SPECIALS, show_progress=False)
    t.save(path)
    j = json.load(open(path, encoding="utf-8"))
    for added in j["added_tokens"]:
        added["lstrip"] = added["content"] == "<mask>"
    j["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": False}
    return j


def load(j, add_prefix_space=False):
    j = json.loads(json.dumps(j))
    j["pre_tokenizer"]["add_prefix_space"] = add_prefix_space
    return Tokenizer.from_str(json.dumps(j))


def encode_pair(tok, a, b, max_tokens):
    if max_tokens:
        tok.enable_truncation(max_length=max_tokens, strategy="longest_first")
    else:
        tok.no_truncation()
    return tok.encode(a, b) if b is not None else tok.encode(a)


def check_transformers(j, cases, pairs):
    """transformers' own conversion of vocab.json + merges.txt must agree."""
    try:
        from transformers import RobertaTokenizerFast
    except ImportError:
        print("transformers not installed: vocab.json + merges.txt path not cross-checked")
        return
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(j["model"]["vocab"], f, ensure_ascii=False)
        with open(os.path.join(d, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(" ".join(m) + "\n" for m in j["model"]["merges"]))
        tok = RobertaTokenizerFast(vocab_file=os.path.join(d, "vocab.json"),
                                   merges_file=os.path.join(d, "merges.txt"))
    for c in cases:
        assert tok(c["text"], add_special_tokens=False)["input_ids"] == c["ids"], c["text"]
    for p in pairs:
        kwargs = {"truncation": "longest_first", "max_length": p["max_tokens"]} if p["max_tokens"] else {}
        enc = tok(p["a"], p["b"], **kwargs) if p["b"] is not None else tok(p["a"], **kwargs)
        assert enc["input_ids"] == p["ids"], p["a"]
    print("transformers RobertaTokenizerFast on vocab.json + merges.txt agrees")


def main():
    path = os.path.join(FIXTURES, "roberta_bpe_tokenizer.json")
    if "--retrain" in sys.argv[1:] or not os.path.exists(path):
        j = train(path)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
    else:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
    plain, prefixed = load(j), load(j, add_prefix_space=True)
    cases = [{"text": text, "ids": plain.encode(text, add_special_tokens=False).ids,
              "ids_prefix_space": prefixed.encode(text, add_special_tokens=False).ids}
             for text in MULTILINGUAL + EXTRA]
    pairs = []
    for a, b, max_tokens in PAIRS:
        enc = encode_pair(plain, a, b, max_tokens)
        pairs.append({"a": a, "b": b, "max_tokens": max_tokens, "ids": enc.ids, "type_ids": enc.type_ids})
    check_transformers(j, cases, pairs)
    header = {
        "generator": "tests/tokenizer/make_roberta_fixture.py",
        "reference": "HF tokenizers on roberta_bpe_tokenizer.json (trained on docs/*.md), and with add_prefix_space",
        "tokenizer": "tokenizer/roberta_bpe_tokenizer.json",
        "pairs": pairs,
    }
    write_fixture(os.path.join(FIXTURES, "roberta_bpe.json"), header, cases)
    print(f"wrote {len(cases)} cases and {len(pairs)} pairs to {FIXTURES}")
    make_roberta_cases.write(j, os.path.join(FIXTURES, "roberta_bpe_cases.json"))


if __name__ == "__main__":
    main()
