#!/usr/bin/env python3
"""Prints the rows of the raw logs here: python3 table.py DIR (ppl_*.json, compress_*.log; s260k_*.txt)."""
import glob, json, os, re, sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
for f in sorted(glob.glob(f"{d}/ppl_*.json")):
    try:
        p = json.load(open(f))
    except ValueError:
        continue
    name = os.path.basename(f)[4:-5]
    log = f"{d}/compress_{name.rsplit('_', 2)[0]}.log"
    params = wall = ""
    if os.path.exists(log):
        text = open(log).read()
        m = re.search(r"compressed \d+ layers in ([\d.]+) s: (\d+) parameters \(([\d.]+)% of dense\)", text)
        if m:
            params, wall = f"{int(m.group(2)):,} ({float(m.group(3)):.1f}%)", f"{float(m.group(1)):.0f} s"
    print(f"| {name} | {params} | {p['perplexity']:.2f} | {p['windows']} windows | {wall} |")
for f in sorted(glob.glob(f"{d}/s260k_*.txt")):
    for m in re.finditer(r"^(k\S+) (\S+) (\S+) (\{.*?\n\})", open(f).read(), re.S | re.M):
        print(f"| stories260K {m.group(1)} {m.group(2)} | {m.group(3)} | {json.loads(m.group(4))['perplexity']:.2f} |")
