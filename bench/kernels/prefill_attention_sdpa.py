# The peer of prefill_attention_bench: PyTorch's scaled_dot_product_attention
# (is_causal=True, bf16, flash backend only) on the same shapes at pos 0, in
# the same [n, heads, head_dim] memory layout, timed the same way (median of
# 20 calls after 3 warm-ups, CUDA events) and with the same FLOP count.
# GQA runs through enable_gqa, which the flash backend takes (torch 2.11):
# K and V are not expanded.
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

WARMUP, REPS = 3, 20


def time_ms(f):
    for _ in range(WARMUP):
        f()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(REPS):
        a.record()
        f()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return sorted(ms)[len(ms) // 2]


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'heads/kv/hd':12} {'n':>5} {'sdpa ms':>10} {'TFLOP/s':>9}")
    for heads, kv_heads, hd in ((32, 32, 128), (32, 8, 128), (32, 32, 64), (32, 8, 64)):
        for n in (512, 1024, 2048, 8192):
            def rand(h):  # [1, h, n, hd] views of [1, n, h, hd] storage, like the cache
                x = torch.rand(1, n, h, hd, device="cuda", dtype=torch.bfloat16)
                return x.mul_(2).sub_(1).transpose(1, 2)
            q, k, v = rand(heads), rand(kv_heads), rand(kv_heads)
            gqa = kv_heads != heads
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # raises rather than fall back
                ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                    enable_gqa=gqa))
            flops = 4.0 * hd * heads * 0.5 * n * n
            print(f"{heads:3d}/{kv_heads:3d}/{hd:3d}  {n:5d} {ms:10.4f} {flops / (ms * 1e9):9.1f}")


if __name__ == "__main__":
    main()
