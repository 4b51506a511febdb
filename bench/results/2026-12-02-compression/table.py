#!/usr/bin/env python3
"""Prints the rows of the raw logs: python3 table.py DIR... (ppl_*.json with compress_*.log beside them; s260k_*.txt)."""
import glob, json, os, re, sys

TEXTS = ("wikitext2_test", "ptb_test", "tinystories_val_head")
for d in sys.argv[1:] or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "logs")]:
    rows = {}
    for f in sorted(glob.glob(f"{d}/ppl_*.json")):
        try:
            p = json.load(open(f))
        except ValueError:
            continue
        base = os.path.basename(f)[4:-5]
        text = next((t for t in TEXTS if base.endswith("_" + t)), None)
        if text is None:
            continue
        rows.setdefault(base[: -len(text) - 1], {})[text] = p["perplexity"]
    for name, ppl in rows.items():
        params = wall = ""
        log = f"{d}/compress_{name}.log"
        if os.path.exists(log):
            t = open(log, errors="replace").read()
            m = re.search(r"compressed \d+ layers in ([\d.]+) s: (\d+) parameters \(([\d.]+)% of dense\)", t)
            u = re.search(r"([\d.]+) s wall, ([\d.]+) s user", t)
            if m:
                params = f"{int(m.group(2)):,} ({float(m.group(3)):.1f}%)"
            if u:
                wall = f"{float(u.group(1)):.0f} s / {float(u.group(2)):.0f} s"
        cells = " | ".join(f"{ppl[t]:.2f}" if t in ppl else "" for t in TEXTS)
        print(f"| {name} | {params} | {cells} | {wall} |")
    for f in sorted(glob.glob(f"{d}/s260k_*.txt")):
        for m in re.finditer(r"^(k\S+) (\S+) (\S+) (\{.*?\n\})", open(f).read(), re.S | re.M):
            print(f"| stories260K {m.group(1)} {m.group(2)} | {m.group(3)} | {json.loads(m.group(4))['perplexity']:.2f} |")
