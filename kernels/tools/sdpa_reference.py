#!/usr/bin/env python3
"""PyTorch SDPA reference rates for bench_kernels --ref, measured on this GPU.

Prints one TSV line per (pass, dtype, d, N, causal, backend):
    fwd|bwd  bf16|fp16  d  N  causal(0|1)  flash|cudnn  ms  TFLOP/s
with the same shapes and FLOP convention as bench_kernels: batch = 16384 / N, heads = 2048 / d,
forward 4*N^2*d per head, backward 2.5x that, both halved under the causal mask.
Times: CUDA events, 3 warm-ups, median of 10. A backend that refuses a shape is skipped (stderr).
"""
import argparse
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_ms(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="N = 1024 and 8192 only, 5 repeats")
    args = ap.parse_args()
    ns = [1024, 8192] if args.quick else [1024, 2048, 4096, 8192, 16384]
    reps = 5 if args.quick else 10
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    for d in (64, 128):
        for n in ns:
            for causal in (False, True):
                for dt_name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
                    b, h = 16384 // n, 2048 // d
                    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dt, requires_grad=True) for _ in range(3))
                    g = torch.randn(b, h, n, d, device="cuda", dtype=dt)
                    flop = 4.0 * n * n * d * b * h * (0.5 if causal else 1.0)
                    for name, be in backends.items():
                        try:
                            with sdpa_kernel(be):
                                fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                ms = median_ms(fwd, reps)
                                print(f"fwd\t{dt_name}\t{d}\t{n}\t{int(causal)}\t{name}\t{ms:.4f}\t{flop / ms / 1e9:.1f}", flush=True)
                                out = fwd()

                                def bwd():
                                    q.grad = k.grad = v.grad = None  # fresh gradients, no accumulation kernels
                                    out.backward(g, retain_graph=True)

                                ms = median_ms(bwd, reps)
                                print(f"bwd\t{dt_name}\t{d}\t{n}\t{int(causal)}\t{name}\t{ms:.4f}\t{2.5 * flop / ms / 1e9:.1f}", flush=True)
                                del out
                        except RuntimeError as e:
                            print(f"skip {name} {dt_name} d={d} n={n} causal={causal}: {str(e).splitlines()[0]}", file=sys.stderr)
                        q.grad = k.grad = v.grad = None
                    del q, k, v, g
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
