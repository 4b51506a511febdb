#!/usr/bin/env python3
"""Linear-probe accuracy of an encoder's sentence embeddings on SST-2 dev.

Embeds every sentence of the GLUE SST-2 dev set (../shared/data/glue/sst2_dev.tsv:
872 sentences, labels 0/1) with `flashsvd embed -o X.npy` and reports the accuracy
of a logistic-regression probe, cross-validated over stratified folds (5,
shuffled with a fixed seed): in each fold, features are standardized and the L2
strength C (1e-4 .. 1e2) is chosen by an inner 5-fold search on the training
part alone (SentEval's protocol), so no choice is made on the scored sentences. With --reference, the same
sentences are embedded with a reference model (the dense one, for compressed
models) and the cosine similarity of each sentence's two embeddings is reported
(mean and minimum).

    python3 -m venv build/probe-env && build/probe-env/bin/pip install -r bench/encoder/requirements.txt
    build/probe-env/bin/python bench/encoder/sst2_probe.py -m ~/.cache/flashsvd/all-MiniLM-L6-v2
    build/probe-env/bin/python bench/encoder/sst2_probe.py -m COMPRESSED --reference DENSE --json

Prints one Markdown table row (docs/accuracy.md, "Encoders"), or JSON with --json.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
from sklearn.linear_model import LogisticRegressionCV
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_TSV = ROOT.parent / "shared" / "data" / "glue" / "sst2_dev.tsv"


def read_sst2(path):
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].split("\t") != ["sentence", "label"]:
        sys.exit(f"{path}: expected a 'sentence<TAB>label' header")
    sentences, labels = [], []
    for n, line in enumerate(lines[1:], 2):
        sentence, label = line.rsplit("\t", 1)
        if label not in ("0", "1"):
            sys.exit(f"{path}:{n}: label {label!r} is not 0 or 1")
        sentences.append(sentence.strip())
        labels.append(int(label))
    return sentences, np.array(labels)


def embed(flashsvd, model, sentences, device, threads, workdir):
    """[sentences, dim] fp32 embeddings from `flashsvd embed -o`."""
    text = pathlib.Path(workdir) / "sentences.txt"
    text.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    out = pathlib.Path(workdir) / "embeddings.npy"
    subprocess.run([str(flashsvd), "embed", "-m", str(model), "--device", device, "--threads", str(threads),
                    "--input", str(text), "-o", str(out)], check=True, stderr=subprocess.DEVNULL)
    x = np.load(out)
    if x.shape[0] != len(sentences):
        sys.exit(f"flashsvd embed returned {x.shape[0]} rows for {len(sentences)} sentences")
    return x


def probe_accuracy(x, y, folds, seed):
    probe = make_pipeline(StandardScaler(),
                          LogisticRegressionCV(Cs=np.logspace(-4, 2, 13).tolist(), cv=folds, scoring="accuracy",
                                               l1_ratios=(0.0,), use_legacy_attributes=False, max_iter=5000))
    scores = cross_val_score(probe, x, y, cv=StratifiedKFold(folds, shuffle=True, random_state=seed))
    return float(scores.mean()), float(scores.std())


def cosines(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", "--model", required=True, help="encoder directory to evaluate")
    p.add_argument("--reference", help="encoder directory to compare embeddings with (e.g. the dense model)")
    p.add_argument("--tsv", default=str(DEFAULT_TSV), help="SST-2 dev TSV (sentence<TAB>label, with a header)")
    p.add_argument("--flashsvd", default=str(ROOT / "build" / "flashsvd"), help="the flashsvd binary")
    p.add_argument("--device", default="cpu", help="--device of flashsvd embed (cpu: the fp32 reference)")
    p.add_argument("--threads", type=int, default=0, help="--threads of flashsvd embed on the CPU (0: all)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--label", help="the table row's name (default: the model directory's name)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table row")
    args = p.parse_args()

    sentences, labels = read_sst2(args.tsv)
    with tempfile.TemporaryDirectory() as tmp:
        x = embed(args.flashsvd, args.model, sentences, args.device, args.threads, tmp)
        ref = embed(args.flashsvd, args.reference, sentences, args.device, args.threads, tmp) if args.reference else None
    accuracy, spread = probe_accuracy(x, labels, args.folds, args.seed)
    result = {"model": str(args.model), "sentences": len(sentences), "dim": int(x.shape[1]), "folds": args.folds,
              "seed": args.seed, "accuracy": accuracy, "accuracy_std": spread}
    if ref is not None:
        c = cosines(x, ref)
        result.update(reference=str(args.reference), cosine_mean=float(c.mean()), cosine_min=float(c.min()))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    name = args.label or pathlib.Path(args.model).resolve().name
    cosine = f"{result['cosine_mean']:.5f} (min {result['cosine_min']:.5f})" if ref is not None else "1 (itself)"
    print(f"| {name} | {cosine} | {100 * accuracy:.2f} ± {100 * spread:.2f} |")


if __name__ == "__main__":
    main()
