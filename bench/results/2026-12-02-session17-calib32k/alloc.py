#!/usr/bin/env python3
"""Budget allocation summary of a compress log (default model shapes): python3 alloc.py LOG...
Per matrix type: layers kept dense, and kept parameters as % of the type's dense parameters
(rank r of an m x n matrix stores r (m + n)), from the final pass's rank lines."""
import re, sys

SHAPES = {"q": (576, 576), "k": (192, 576), "v": (192, 576), "o": (576, 576),
          "gate": (1536, 576), "up": (1536, 576), "down": (576, 1536)}
for path in sys.argv[1:]:
    lines = open(path, errors="replace").read().splitlines()
    start = max((i for i, l in enumerate(lines) if "sequential calibration" in l), default=0)
    layers = [l for l in lines[start:] if re.search(r"layer \d+/\d+: ranks", l)]
    dense = {k: [] for k in SHAPES}
    kept = {k: 0 for k in SHAPES}
    for n, l in enumerate(layers, 1):
        for k, r in re.findall(r"(\w+) (dense|\d+)", l.split("ranks", 1)[1]):
            m, c = SHAPES[k]
            if r == "dense":
                dense[k].append(n)
                kept[k] += m * c
            else:
                kept[k] += min(int(r) * (m + c), m * c)
    print(path, f"({len(layers)} layers)")
    for k, (m, c) in SHAPES.items():
        print(f"  {k:5s} dense in {len(dense[k]):2d} layers {dense[k]}; kept {100 * kept[k] / (m * c * len(layers)):.0f}%")
