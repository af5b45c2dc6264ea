#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention in fp16 on CUDA, batch 1, 12 heads: the reference
the fused attention kernels are measured against (issue 11). GPU time per call from CUDA events
over back-to-back calls, p50 of 20 repetitions; TFLOP/s counts 4 S Skv D H multiply-adds x 2."""
import sys

import torch
import torch.nn.functional as F


def time_sdpa(s, d, heads=12, causal=False, reps=20, inner=20):
    q, k, v = (torch.randn(1, heads, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / inner)
    times.sort()
    return times[len(times) // 2]


def main():
    lengths = [int(x) for x in sys.argv[1:]] or [128, 197, 512, 2048]
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for d in (64, 128):
        for s in lengths:
            ms = time_sdpa(s, d)
            flops = 4.0 * s * s * d * 12
            print(f"sdpa fp16 B1 H12 S{s} D{d}: GPU p50 {ms:.4f} ms, {flops / ms / 1e9:.2f} TFLOP/s")


if __name__ == "__main__":
    main()
