"""Session 28 probe: what the encoder's small-K products (BERT-base keep 0.5, 32 x 512 tokens) cost in
cuBLAS(Lt) through torch, with and without their epilogues, and what a Triton kernel with the GELU in its
epilogue reaches on the same shapes (an estimate of what a kernel of our own could do)."""
import json, sys
import torch, torch.nn.functional as F
import triton, triton.language as tl

torch.manual_seed(0)
dev = "cuda"
n = 16384

def t(fn, reps=50):
    for _ in range(5): fn()
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    torch.cuda.synchronize(); s.record()
    for _ in range(reps): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / reps * 1000  # us

out = {}
def rec(name, us, flop, bytes_):
    out[name] = {"us": round(us, 2), "tflops": round(flop / us / 1e6, 1), "tbs": round(bytes_ / us / 1e6, 2)}
    print(f"{name:40s} {us:8.2f} us {flop/us/1e6:7.1f} TFLOP/s {bytes_/us/1e6:6.2f} TB/s", flush=True)

for K in (307, 312, 320):
    x = torch.randn(n, K, device=dev, dtype=torch.bfloat16)
    w = torch.randn(3072, K, device=dev, dtype=torch.bfloat16) / K**0.5
    b = torch.randn(3072, device=dev, dtype=torch.bfloat16)
    y = torch.empty(n, 3072, device=dev, dtype=torch.bfloat16)
    fl, by = 2 * n * 3072 * K, 2 * (n * K + 3072 * K + n * 3072)
    rec(f"up2 K={K} mm", t(lambda: torch.mm(x, w.t(), out=y)), fl, by)
    rec(f"up2 K={K} addmm bias", t(lambda: torch.addmm(b, x, w.t(), out=y)), fl, by)
    rec(f"up2 K={K} addmm gelu", t(lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True)), fl, by)
    h = torch.randn(n, 3072, device=dev, dtype=torch.bfloat16)
    d = torch.randn(K, 3072, device=dev, dtype=torch.bfloat16) / 3072**0.5
    r = torch.empty(n, K, device=dev, dtype=torch.bfloat16)
    rec(f"down1 N={K} mm", t(lambda: torch.mm(h, d.t(), out=r)), fl, 2 * (n * 3072 + K * 3072 + n * K))
x = torch.randn(3, n, 192, device=dev, dtype=torch.bfloat16)
w = torch.randn(3, 768, 192, device=dev, dtype=torch.bfloat16)
y = torch.empty(3, n, 768, device=dev, dtype=torch.bfloat16)
rec("qkv2 bmm K=192", t(lambda: torch.bmm(x, w.transpose(1, 2), out=y)), 3 * 2 * n * 768 * 192, 2 * 3 * (n * 192 + n * 768))
g = torch.randn(n, 768, device=dev, dtype=torch.bfloat16)
lw = torch.ones(768, device=dev, dtype=torch.bfloat16); lb = torch.zeros(768, device=dev, dtype=torch.bfloat16)
rec("layernorm 768 torch", t(lambda: F.layer_norm(g, (768,), lw, lb)), 0, 2 * 2 * n * 768)

@triton.autotune(configs=[triton.Config({"BM": bm, "BN": bn, "BK": 64, "G": 8}, num_stages=s, num_warps=wp)
                          for bm, bn, s, wp in [(128, 256, 3, 8), (128, 128, 4, 8), (256, 128, 3, 8), (128, 256, 4, 8),
                                                (64, 256, 4, 4), (128, 128, 3, 4), (256, 128, 4, 8), (128, 64, 4, 4)]],
                 key=["M", "N", "K"])
@triton.jit
def gemm_gelu(a, w, bias, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr,
              GELU: tl.constexpr):
    pid = tl.program_id(0)
    nm, nn = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (G * nn); first = group * G; gs = min(nm - first, G)
    pm = first + (pid % (G * nn)) % gs; pn = (pid % (G * nn)) // gs
    rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = tl.load(a + rm[:, None] * K + (k0 + rk)[None, :], mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        kw = tl.load(w + rn[None, :] * K + (k0 + rk)[:, None], mask=(rn[None, :] < N) & ((k0 + rk)[:, None] < K), other=0.0)
        acc = tl.dot(ka, kw, acc)
    acc += tl.load(bias + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if GELU:
        u = 0.7978845608 * (acc + 0.044715 * acc * acc * acc)
        e = tl.exp(2 * u)
        acc = 0.5 * acc * (2 - 2 / (e + 1))
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

for K in (312, 320):
    x = torch.randn(n, K, device=dev, dtype=torch.bfloat16)
    w = torch.randn(3072, K, device=dev, dtype=torch.bfloat16) / K**0.5
    b = torch.randn(3072, device=dev, dtype=torch.bfloat16)
    y = torch.empty(n, 3072, device=dev, dtype=torch.bfloat16)
    fl, by = 2 * n * 3072 * K, 2 * (n * K + 3072 * K + n * 3072)
    for gel in (0, 1):
        grid = lambda m: (triton.cdiv(n, m["BM"]) * triton.cdiv(3072, m["BN"]),)
        f = lambda: gemm_gelu[grid](x, w, b, y, n, 3072, K, GELU=gel)
        f(); torch.cuda.synchronize()
        rec(f"up2 K={K} triton gelu={gel} {gemm_gelu.best_config}", t(f), fl, by)
    ref = F.gelu(F.linear(x.float(), w.float(), b.float()), approximate="tanh")
    print("triton max err", (y.float() - ref).abs().max().item(), flush=True)
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdout", "w"), indent=1)
