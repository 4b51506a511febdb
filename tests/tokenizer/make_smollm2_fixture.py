"""Reference ids of SmolLM2's byte-level BPE, by Hugging Face `tokenizers`.

The tokenizer is rebuilt from the GGUF's own metadata (tokens, merges, control
tokens) with the pre-tokenizer of SmolLM2's tokenizer.json: Sequence[Digits
(individual_digits), ByteLevel(add_prefix_space=false, use_regex=true)].
Writes tests/fixtures/tokenizer/smollm2_bpe.json. Needs the pip packages
`tokenizers` and `gguf`. GGUF path: argument, else $FLASHSVD_SMOLLM2_GGUF.
"""
import os
import sys

from gguf import GGUFReader, GGUFValueType
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from samples import MULTILINGUAL, write_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CONTROL = 3  # tokenizer.ggml.token_type of special tokens

EXTRA = [
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is 12345 + 678?<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more<|im_end|>",
    "<|im_start|<|im_end|> <|unknown|>",
    "12345 67890 3.5e-10 0x1F 1,234,567",
    "a\n\n\n\nb\r\n\r\nc   \n  d",
    "\t\t  \u00a0nbsp\u3000ideographic space\u2009thin",
    "fn main() { let v: Vec<u8> = vec![1, 2, 3]; println!(\"{:?}\", v); }",
    "Ǆ ǅ ǆ ß ẞ ﬁ Ω Å ½ ² ٣ ⅷ",
    "        eight spaces then text",
    "trailing spaces   ",
]


def field(reader, key):
    f = reader.fields[key]
    if f.types[0] == GGUFValueType.ARRAY:
        if f.types[1] == GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [int(f.parts[i][0]) for i in f.data]
    if f.types[0] == GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    return f.parts[f.data[0]][0]


def build(gguf_path, with_specials):
    r = GGUFReader(gguf_path)
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in field(r, "tokenizer.ggml.merges")]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    if with_specials:
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t, ty in zip(tokens, types) if ty == CONTROL])
    return tok


def main():
    gguf_path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FLASHSVD_SMOLLM2_GGUF", "")
    if not gguf_path:
        sys.exit("usage: make_smollm2_fixture.py SmolLM2-135M-Instruct.Q4_1.gguf")
    plain = build(gguf_path, with_specials=False)    # specials spelled in text are ordinary text
    special = build(gguf_path, with_specials=True)   # ... or matched as control tokens
    cases = []
    for text in MULTILINGUAL + EXTRA:
        ids = plain.encode(text, add_special_tokens=False).ids
        ids_special = special.encode(text, add_special_tokens=False).ids
        assert plain.decode(ids, skip_special_tokens=False) == text
        cases.append({"text": text, "ids": ids, "ids_parse_special": ids_special})
    header = {
        "generator": "tests/tokenizer/make_smollm2_fixture.py",
        "reference": "HF tokenizers from SmolLM2-135M-Instruct.Q4_1.gguf vocab/merges, "
                     "pre-tokenizer Sequence[Digits(individual), ByteLevel(no prefix space)]",
    }
    path = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "smollm2_bpe.json")
    write_fixture(path, header, cases)
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
