"""Reference ids for the RoBERTa tokenizer's harder cases, by Hugging Face `tokenizers` and
`transformers` (called by make_roberta_fixture.py, which passes the base tokenizer.json).

Writes roberta_bpe_cases.json with
- "added": groups of added tokens (single_word, lstrip, rstrip, normalized) appended to the
  base tokenizer, and per text the ids `tokenizers` gives without specials;
- "directories": vocab.json + merges.txt directories (the base vocabulary) with extra
  added tokens in tokenizer_config.json / special_tokens_map.json / added_tokens.json,
  stored as file texts, and the ids of transformers' AutoTokenizer (RobertaTokenizerFast
  converted from the slow files);
- "templates": TemplateProcessing post-processors on the base tokenizer, with ids and type
  ids of texts and pairs under longest-first truncation;
- "wordpiece": a small WordPiece tokenizer.json and the same for its post-processors.
"""
import copy
import json
import os
import tempfile

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers


def token(content, single_word=False, lstrip=False, rstrip=False, normalized=False, special=False):
    return {"content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


# Word characters are those of regex \w: letters, marks, digits, connector punctuation, joiners.
WORDS = ["ab", "xab", "ab x", "abx", "_ab", "ab_", "1ab", "ab1", "ab.", "(ab)", " ab ", "-ab-", "ab\tab\nab",
         "éab", "abé", "ab\u0301", "a\u200dab", "ab\u200d", "\u0663ab", "\u2177ab", "ab\u203f", "ab\u00a0x",
         "ab ab ab", "abab", "xabc", "xabcbc", "abc", " abc.", "", " "]
ADDED = [
    {"name": "single_word",
     "tokens": [token("ab", single_word=True), token("abc", single_word=True), token("bc"),
                token("END", special=True), token("ok", single_word=True, normalized=True),
                token("<m>", single_word=True, lstrip=True, rstrip=True, special=True),
                token("x_y", single_word=True, normalized=True), token(" sp", single_word=True, rstrip=True),
                token("the", single_word=True)],
     "texts": WORDS + ["ENDok", "END ok", "okEND", "bok", "ok1", "oké", "ok ok", "<m>", "a <m> b", "a<m>b",
                       "a  <m>  b", ".<m>.", "x_y", "x_yz", "(x_y)", "a sp", "a spx", "a sp sp", ".sp sp",
                       "the other then", "bathe the.", "The capital of France is <mask>."]},
    {"name": "strip_and_overlap",
     "tokens": [token("<r>", rstrip=True, special=True), token(" ", lstrip=True, rstrip=True),
                token("<l>", lstrip=True, single_word=True), token("ab", rstrip=True, normalized=True),
                token("b", single_word=True)],
     "texts": ["  x", "a  b", "<r>  <r> y", "x<r> <r>", "\t \u00a0x", "a b", "ab  b", "ab   <l> b", "x <l>",
               "a\u3000<l>", "b ab b", "<r>b", "<l><l>", "ab", "é b é"]},
]

BASE_SPECIALS = {str(i): token(t, lstrip=t == "<mask>", special=True)
                 for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])}
DIR_TEXTS = ["Hello <ent> world", "a<ent>b <e2>c", " <e2> hello", "hello there hellos", "the other the",
             "x_ x_y <mask>", "newword<new>  newword", "<new2>x<pad>", "<s>and</s>", "<x1> <x2>", " the 30", "x30"]
DIRECTORIES = [
    {"name": "added_tokens_decoder",
     "files": {"tokenizer_config.json": {
         "added_tokens_decoder": {**BASE_SPECIALS,
                                  "600": token("<ent>", rstrip=True, special=True),
                                  "601": token("<e2>", lstrip=True, single_word=True, special=True),
                                  "602": token("hello", normalized=True),
                                  "603": token("x_", lstrip=True),
                                  "354": token("the", single_word=True)},
         "additional_special_tokens": ["<ent>", "<e2>"], "cls_token": "<s>", "mask_token": "<mask>",
         "tokenizer_class": "RobertaTokenizer"}}},
    # transformers numbers added tokens after vocab.json in index order, whatever indices they declare.
    {"name": "added_tokens_decoder_gaps",
     "files": {"tokenizer_config.json": {
         "added_tokens_decoder": {"610": token("<e2>", special=True), "605": token("hello"),
                                  "4": token("<mask>", lstrip=True, special=True)}}}},
    {"name": "special_tokens_map_and_added_tokens",
     "files": {"special_tokens_map.json": {
                   "mask_token": {"content": "<mask>", "lstrip": True, "rstrip": False, "single_word": False,
                                  "normalized": False},
                   "additional_special_tokens": ["<ent>", {"content": "<e2>", "rstrip": True}]},
               "added_tokens.json": {"<ent>": 600, "<e2>": 601, "newword": 602}}},
    {"name": "old_tokenizer_config",
     "files": {"tokenizer_config.json": {
                   "mask_token": {"__type": "AddedToken", "content": "<mask>", "lstrip": True, "normalized": True,
                                  "rstrip": False, "single_word": True},
                   "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": False, "normalized": True,
                                 "rstrip": True, "single_word": False},
                   "add_prefix_space": True},
               "special_tokens_map.json": {"pad_token": "<new>", "sep_token": "<new2>"},
               "added_tokens.json": {"<new>": 600, "hello": 601}}},
    {"name": "appended_specials",
     "files": {"tokenizer_config.json": {"cls_token": "<pad>"},
               "special_tokens_map.json": {"sep_token": "<new>", "pad_token": "<new2>"}}},
    # transformers 4.46 files added_tokens.json's last token for the special-token settings under
    # the text of the last additional special token: here cls_token "<x1>" becomes "<x2>".
    {"name": "stale_variable",
     "files": {"tokenizer_config.json": {"cls_token": "<x1>"},
               "special_tokens_map.json": {"additional_special_tokens": ["<x1>"]},
               "added_tokens.json": {"<x1>": 600, "<x2>": 601}}},
    # RobertaTokenizer drops merges.txt's first line (the "#version" header, whatever it holds)
    # and what follows its last newline.
    {"name": "merges_without_header", "merges": "without_header", "files": {}},
    {"name": "merges_without_final_newline", "merges": "without_final_newline", "files": {}},
]
PAIRS = [("How old are you?", "I am six years old.", 0),
         ("A man is playing a guitar.", "Someone plays music on an instrument, loudly and happily.", 14),
         ("one two three four five six", "seven eight", 12),
         ("alpha beta", "gamma delta epsilon zeta eta theta", 12),
         ("single long sentence with many words to cut", None, 8),
         ("", "the other one", 0),
         ("Grüße aus München", None, 0)]


def special(name, ids):
    return {"id": name, "ids": ids, "tokens": [name] * len(ids)}


def S(name, type_id=0):  # a special token of a template
    return {"SpecialToken": {"id": name, "type_id": type_id}}


def Q(name, type_id=0):  # sequence A or B of a template
    return {"Sequence": {"id": name, "type_id": type_id}}
TEMPLATES = [
    {"name": "bert_like", "post_processor": {
        "type": "TemplateProcessing", "single": [S("<s>"), Q("A"), S("</s>")],
        "pair": [S("<s>"), Q("A"), S("</s>"), Q("B", 1), S("</s>", 1)],
        "special_tokens": {"<s>": special("<s>", [0]), "</s>": special("</s>", [2])}}},
    {"name": "multi_id_and_types", "post_processor": {
        "type": "TemplateProcessing", "single": [S("PRE", 2), Q("A", 1), S("</s>")],
        "pair": [Q("B", 1), S("PRE"), S("</s>", 1), Q("A", 0), S("</s>", 2)],
        "special_tokens": {"PRE": special("PRE", [4, 1, 3]), "</s>": special("</s>", [2])}}},
    {"name": "roberta_as_template", "post_processor": {
        "type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            {"type": "TemplateProcessing", "single": [S("<s>"), Q("A"), S("</s>")],
             "pair": [S("<s>"), Q("A"), S("</s>"), S("</s>"), Q("B"), S("</s>")],
             "special_tokens": {"<s>": special("<s>", [0]), "</s>": special("</s>", [2])}}]}},
    {"name": "bert_processing", "post_processor": {"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}},
]

WORDPIECE_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "the", "##s", "un", "##aff",
                   "##able", ",", "!", "a", "b", "##c", "old", "are", "you", "?"]
WORDPIECE_TEMPLATES = [
    {"name": "bert", "post_processor": {
        "type": "TemplateProcessing", "single": [S("[CLS]"), Q("A"), S("[SEP]")],
        "pair": [S("[CLS]"), Q("A"), S("[SEP]"), Q("B", 1), S("[SEP]", 1)],
        "special_tokens": {"[CLS]": special("[CLS]", [2]), "[SEP]": special("[SEP]", [3])}}},
    {"name": "reordered", "post_processor": {
        "type": "TemplateProcessing", "single": [Q("A", 1), S("[SEP]", 2), S("[CLS]")],
        "pair": [S("[CLS]", 1), Q("B", 0), S("[MASK]"), Q("A", 1), S("[SEP]", 1)],
        "special_tokens": {"[CLS]": special("[CLS]", [2, 4]), "[SEP]": special("[SEP]", [3]),
                           "[MASK]": special("[MASK]", [4])}}},
    {"name": "bert_processing", "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}},
]
WORDPIECE_PAIRS = [("Hello, world!", "unaffable hellos", 0), ("hello world the a b", "are you old?", 7),
                   ("Unaffable!", None, 4), ("abc", "", 0)]


def added_groups(base):
    groups = []
    for g in ADDED:
        j = copy.deepcopy(base)
        vocab, next_id = j["model"]["vocab"], len(j["model"]["vocab"])
        tokens = []
        for t in g["tokens"]:
            tokens.append(dict(t, id=vocab[t["content"]] if t["content"] in vocab else next_id))
            next_id += t["content"] not in vocab
        j["added_tokens"] += tokens
        tok = Tokenizer.from_str(json.dumps(j))
        cases = [{"text": x, "ids": tok.encode(x, add_special_tokens=False).ids} for x in g["texts"]]
        groups.append({"name": g["name"], "added_tokens": tokens, "cases": cases})
    return groups


def merges_txt(base, form=None):
    text = "#version: 0.2\n" + "".join(" ".join(m) + "\n" for m in base["model"]["merges"])
    return {None: text, "without_header": text.split("\n", 1)[1], "without_final_newline": text[:-1]}[form]


def directories(base):
    from transformers import AutoTokenizer
    out = []
    for d in DIRECTORIES:
        files = {name: json.dumps(content, ensure_ascii=False) for name, content in d["files"].items()}
        with tempfile.TemporaryDirectory() as root:
            with open(os.path.join(root, "vocab.json"), "w", encoding="utf-8") as f:
                json.dump(base["model"]["vocab"], f, ensure_ascii=False)
            with open(os.path.join(root, "merges.txt"), "w", encoding="utf-8") as f:
                f.write(merges_txt(base, d.get("merges")))
            with open(os.path.join(root, "config.json"), "w") as f:  # tells AutoTokenizer it is RoBERTa
                json.dump({"model_type": "roberta"}, f)
            for name, text in files.items():
                with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                    f.write(text)
            tok = AutoTokenizer.from_pretrained(root)
            assert type(tok).__name__ == "RobertaTokenizerFast", type(tok)
            cases = [{"text": x, "ids": tok(x, add_special_tokens=False)["input_ids"]} for x in DIR_TEXTS]
            pairs = [{"a": a, "b": b, "ids": (tok(a, b) if b is not None else tok(a))["input_ids"]}
                     for a, b, _ in PAIRS[:2] + [("<ent> hello", None, 0)]]
            assert all(max(c["ids"] + [0]) < len(tok) for c in cases + pairs), d["name"]
        out.append({"name": d["name"], "merges": d.get("merges"), "files": files, "cases": cases, "pairs": pairs})
    return out


def framed(tok_json, templates, pairs):
    out = []
    for t in templates:
        j = copy.deepcopy(tok_json)
        j["post_processor"] = t["post_processor"]
        tok = Tokenizer.from_str(json.dumps(j))
        cases = []
        for a, b, max_tokens in pairs:
            if max_tokens:
                tok.enable_truncation(max_length=max_tokens, strategy="longest_first")
            else:
                tok.no_truncation()
            enc = tok.encode(a, b) if b is not None else tok.encode(a)
            cases.append({"a": a, "b": b, "max_tokens": max_tokens, "ids": enc.ids, "type_ids": enc.type_ids})
        out.append({"name": t["name"], "post_processor": t["post_processor"], "pairs": cases})
    return out


def wordpiece():
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(WORDPIECE_VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.add_special_tokens(WORDPIECE_VOCAB[:5])
    j = json.loads(tok.to_str())
    return {"tokenizer": j, "templates": framed(j, WORDPIECE_TEMPLATES, WORDPIECE_PAIRS)}


def dump(value, indent=""):
    """JSON with each case (any object or list without nested objects) on one line, so diffs stay readable."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or "{" not in flat[1:]:
        return flat
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {dump(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    return "[\n" + ",\n".join(inner + dump(v, inner) for v in value) + "\n" + indent + "]"


def write(base, path):
    fixture = {
        "generator": "tests/tokenizer/make_roberta_fixture.py (make_roberta_cases.py)",
        "reference": "HF tokenizers 0.20.3 (added tokens, templates), transformers 4.46.3 AutoTokenizer (directories)",
        "tokenizer": "tokenizer/roberta_bpe_tokenizer.json",
        "added": added_groups(base),
        "directories": directories(base),
        "templates": framed(base, TEMPLATES, PAIRS),
        "wordpiece": wordpiece(),
    }
    with open(path, "w", encoding="utf-8") as f:
        f.write(dump(fixture) + "\n")
    print(f"wrote {path}")
