#!/usr/bin/env python3
"""PyTorch's attention backward (SDPA with the FlashAttention-2 and cuDNN backends) on the shapes of
kernels/tools/bench_attention_backward_fast.cu, for the ratio ours / theirs.

Run on the GPU machine: python3 kernels/tools/sdpa_backward.py
Shapes: d in {64, 128}, N in {1024, 4096, 8192, 16384}, 16 heads, batch = 16384 / N (16k tokens x
16 heads), causal and not, bf16 and fp16. Only the backward is timed: one forward with
requires_grad, then torch.autograd.grad(out, (q, k, v), dout, retain_graph=True) between CUDA
events, median of 20 after 3 warm-ups. FLOPs = 2.5 * 4 N^2 d per head (half under the causal mask).
"""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa


def time_backward(backend, q, k, v, dout, causal, repeats=20):
    with sdpa_kernel(backend):
        out = sdpa(q, k, v, is_causal=causal)
        for _ in range(3):
            torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(repeats):
            start.record()
            torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def main():
    torch.manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    backends = [("FA2", SDPBackend.FLASH_ATTENTION), ("cuDNN", SDPBackend.CUDNN_ATTENTION)]
    for d in (64, 128):
        for causal in (False, True):
            for n in (1024, 4096, 8192, 16384):
                for dtype in (torch.bfloat16, torch.float16):
                    heads, batch = 16, 16384 // n
                    shape = (batch, heads, n, d)
                    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
                    dout = torch.randn(shape, device="cuda", dtype=dtype)
                    flops = 2.5 * 4 * n * n * d * batch * heads * (0.5 if causal else 1.0)
                    cells = []
                    for name, backend in backends:
                        try:
                            ms = time_backward(backend, q, k, v, dout, causal)
                            cells.append(f"{name} {ms:8.3f} ms {flops / ms * 1e-9:6.1f} TFLOP/s")
                        except RuntimeError as e:  # a backend may refuse a shape
                            cells.append(f"{name} n/a ({str(e).splitlines()[0][:40]})")
                    tname = "bf16" if dtype == torch.bfloat16 else "fp16"
                    kind = "causal" if causal else "full"
                    print(f"{tname} d={d:<3} N={n:<5} bh={batch * heads:<3} {kind:<6}  " + "  |  ".join(cells), flush=True)
                    del q, k, v, dout
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
