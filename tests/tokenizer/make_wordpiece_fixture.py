"""Reference ids of BERT's WordPiece tokenizer, by Hugging Face transformers' BertTokenizerFast
(the Rust `tokenizers` library) on the bert-base-uncased vocab.

Writes tests/fixtures/tokenizer/bert_wordpiece.json: per text the ids without specials
for the uncased settings (lower-casing, accent stripping) and the cased ones (neither), and
`[CLS] A [SEP] B [SEP]` pairs with token types under longest-first truncation.
Vocab path: argument, else ../shared/data/bert/vocab_uncased.txt.
Needs the pip packages `transformers` and `tokenizers`.
"""
import os
import sys

from transformers import BertTokenizerFast

from samples import MULTILINGUAL, write_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

EXTRA = [
    "Café naïve résumé coöperate Ångström façade",
    "ΣΊΣΥΦΟΣ İstanbul ǅungla ﬁnance Straße",
    "¿Qué tal? ¡Muy bien! «guillemets» „quotes“ — dash… ellipsis",
    "$5+3=8^2 | a~b `tick` <tag> 50% #hash @at & * _under_",
    "control\x00chars\x07and\u200bzero\u200dwidth\u00adsoft\ufeffbom\ue000private",
    "tabs\tand\u3000ideographic\u2028line sep\u00a0nbsp",
    "한국어 텍스트와 漢字 混合 ㄱㄴㄷ",
    "हिन्दी पाठ और ไทย ภาษา",
    "new emoji 🥰 🫠 🧑‍💻 ©®™",
    "[CLS] literal [SEP] specials [MASK] and [unk] [PAD]x",
    "supercalifragilisticexpialidocious " + "a" * 101 + " " + "b" * 100,
    "unaffable tokenization embeddings",
    "",
]

PAIRS = [
    ("How old are you?", "I am six years old.", 0),
    ("A man is playing a guitar.", "Someone plays music on an instrument, loudly and happily.", 12),
    ("one two three four five six", "seven eight", 9),
    ("alpha beta", "gamma delta epsilon zeta eta theta", 9),
    ("a b c", "d e f", 8),
    ("a b c d e f g", "h i j k l m n", 10),
    ("single long sentence with many words to cut", None, 6),
]


def main():
    vocab = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "data", "bert", "vocab_uncased.txt")
    uncased = BertTokenizerFast(vocab_file=vocab, do_lower_case=True)
    cased = BertTokenizerFast(vocab_file=vocab, do_lower_case=False)
    cases = []
    for text in MULTILINGUAL + EXTRA:
        cases.append({"text": text,
                      "ids_uncased": uncased(text, add_special_tokens=False)["input_ids"],
                      "ids_cased": cased(text, add_special_tokens=False)["input_ids"]})
    pairs = []
    for a, b, max_tokens in PAIRS:
        kwargs = {"truncation": "longest_first", "max_length": max_tokens} if max_tokens else {}
        enc = uncased(a, b, **kwargs) if b is not None else uncased(a, **kwargs)
        pairs.append({"a": a, "b": b, "max_tokens": max_tokens, "ids": enc["input_ids"],
                      "type_ids": enc["token_type_ids"]})
    header = {
        "generator": "tests/tokenizer/make_wordpiece_fixture.py",
        "reference": "transformers BertTokenizerFast (tokenizers) on shared/data/bert/vocab_uncased.txt",
        "vocab": "bert/vocab_uncased.txt",
        "pairs": pairs,
    }
    path = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "bert_wordpiece.json")
    write_fixture(path, header, cases)
    print(f"wrote {len(cases)} cases and {len(pairs)} pairs to {path}")


if __name__ == "__main__":
    main()
