"""What the make_upstream_<family>_fixture.py generators share: a checkout of
the upstream repository at a pinned commit, a tiny random LLaMA (with a tiny
SentencePiece tokenizer) for the upstream code to compress, and the
reference.json the C++ tests read (tests/families/lowrank_reference.h).

Each generator runs the family's own code on the CPU; nothing here imitates
a family's layout.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOKENS = [1, 7, 30, 2, 19, 33, 4, 11, 200, 255]


def fixture_dir(family):
    out = os.path.join(ROOT, "tests", "fixtures", "families", family, "upstream")
    os.makedirs(out, exist_ok=True)
    for old in glob.glob(os.path.join(out, "*")):
        os.remove(old)
    return out


def work_dir(family):
    """An empty scratch directory at a fixed path, so paths recorded in configs repeat from run to run."""
    path = os.path.join(tempfile.gettempdir(), "flashsvd-upstream-" + family)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def checkout(git_dir, commit, family):
    """The Python files of the upstream tree at `commit` (from a clone or bare repository; a mirror may
    lack large media files) in work_dir(family)/tree, on sys.path."""
    tree = os.path.join(work_dir(family), "tree")
    os.makedirs(tree)
    archive = subprocess.run(["git", "--git-dir", git_dir, "archive", commit, "*.py"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    sys.path.insert(0, tree)
    return tree


def git_dir_arg(default_name):
    """--upstream GIT_DIR, else /work/.mirror/<default_name>/repo (a bare mirror)."""
    if "--upstream" in sys.argv:
        return sys.argv[sys.argv.index("--upstream") + 1]
    return f"/work/.mirror/{default_name}/repo"


def tiny_tokenizer(directory):
    """A 256-piece SentencePiece model trained on this repository's docs, saved as a LlamaTokenizer.
    Only the tokenizer files follow later edits of the docs: weights and logits use fixed token ids."""
    import sentencepiece as spm
    from transformers import LlamaTokenizer

    text = os.path.join(os.path.dirname(directory), "tokenizer-text.txt")  # its path is recorded in the model
    with open(text, "w") as out:
        for name in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]:
            out.write(open(name).read())
    prefix = os.path.join(os.path.dirname(directory), "tokenizer")
    spm.SentencePieceTrainer.train(input=text, model_prefix=prefix, vocab_size=256, model_type="bpe",
                                   character_coverage=1.0, num_threads=1, normalization_rule_name="identity", bos_id=1, eos_id=2, unk_id=0,
                                   minloglevel=2)
    LlamaTokenizer(vocab_file=prefix + ".model", legacy=True).save_pretrained(directory)


def tiny_llama(directory, seed=0, **overrides):
    """A random LlamaForCausalLM (fp32) saved with its tokenizer; weights scaled so logits are far from uniform."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    fields = dict(vocab_size=256, hidden_size=64, intermediate_size=172, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
                  initializer_range=0.08, rms_norm_eps=1e-5, tie_word_embeddings=False)
    fields.update(overrides)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**fields))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)  # a loader that skips a norm must show in the logits
    model.save_pretrained(directory, safe_serialization=True)
    tiny_tokenizer(directory)
    return directory


def calibration_ids(n, length, seed=1):
    """Random token ids standing in for the calibration text the upstream code would download."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 256, (n, length), generator=g)


def logits_of(model):
    """fp32 logits of every position of TOKENS from an upstream model object."""
    import torch

    model = model.float().eval()
    with torch.no_grad():
        return model(torch.tensor([TOKENS])).logits[0].double()


def publish(family, saved, logits, **extra):
    """Copies the directory upstream saved (less the upstream .py files some copy in) into the fixture
    directory, with reference.json: TOKENS, the logits, `extra` and the versions used."""
    out = fixture_dir(family)
    for name in sorted(os.listdir(saved)):
        if not name.endswith(".py"):
            shutil.copy(os.path.join(saved, name), out)
    record = {"tokens": TOKENS, "logits": logits.tolist(), **extra, **versions()}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(record, f)
    print("wrote", out, sorted(os.listdir(out)), extra)


def versions():
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__, "python": sys.version.split()[0]}
