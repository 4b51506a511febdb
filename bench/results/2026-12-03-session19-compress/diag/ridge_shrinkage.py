"""Relative output error ||W·λ(C+λI)⁻¹·L||² / ||W·L||² that the re-fit's ridge
alone causes (no compression: M* = W·C·(C+λI)⁻¹ on the dense statistics C),
per matrix, for λ = α·mean diag(C). Usage: ridge_shrinkage.py DENSE_DIR STATS ALPHA..."""
import json, struct, sys
import numpy as np

dense, stats, alphas = sys.argv[1], sys.argv[2], [float(a) for a in sys.argv[3:]]
with open(f"{dense}/model.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    base = 8 + n
def tensor(name):
    h = header[name]; a, b = h["data_offsets"]
    with open(f"{dense}/model.safetensors", "rb") as f:
        f.seek(base + a); return np.frombuffer(f.read(b - a), dtype=np.float32).reshape(h["shape"]).astype(np.float64)
with open(stats, "rb") as f:
    f.read(8)  # magic
    layers, inputs = struct.unpack("<ii", f.read(8))
    dims = struct.unpack(f"<{inputs}q", f.read(8 * inputs))
    f.read(8 + 4 + 8)
    kinds = {0: ["qkv"], 1: ["o"], 2: ["gate_up"], 3: ["down"]}  # stored packed
    print("layer input mean/median diag  " + "  ".join(f"α={a:g}" for a in alphas))
    for l in range(layers):
        for i, d in enumerate(dims):
            f.read(8)
            low = np.zeros((d, d))
            for r in range(d):
                low[r, :r + 1] = np.frombuffer(f.read(8 * (r + 1)), dtype=np.float64)
            c = low + np.tril(low, -1).T
            e, q = np.linalg.eigh(c); e = np.maximum(e, 0)
            diag = np.diag(c)
            row = []
            for a in alphas:
                lam = a * diag.mean()
                worst = 0
                for k in kinds[i]:
                    wq = tensor(f"layers.{l}.{k}.first") @ q
                    full = (wq ** 2 * e).sum()
                    err = (wq ** 2 * e * (lam / (e + lam)) ** 2).sum()
                    worst = max(worst, err / full)
                row.append(f"{worst:.2e}")
            print(f"{l:5d} {['qkv','o','gate_up','down'][i]:7s} {diag.mean() / np.median(diag):12.1f}  " + "  ".join(row), flush=True)
