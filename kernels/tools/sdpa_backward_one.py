#!/usr/bin/env python3
# SDPA's cuDNN backward, one call between cudaProfilerStart / Stop after three warm-ups, for
# kernels/tools/ncu_backward_vs_cudnn.sh:  python3 sdpa_backward_one.py D N CAUSAL DTYPE
# Inputs drawn as bench_attention_backward_fast's (q, k uniform [-2, 2]; v, dO uniform [-1, 1]).
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

d, n, causal = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[sys.argv[4]]
h = 16 * 16384 // n
g = torch.Generator(device="cuda")
g.manual_seed(1)
mk = lambda lo, hi: (torch.rand(1, h, n, d, device="cuda", generator=g) * (hi - lo) + lo).to(dt)
q, k, v = mk(-2, 2).requires_grad_(), mk(-2, 2).requires_grad_(), mk(-1, 1).requires_grad_()
go = mk(-1, 1)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for _ in range(3):
        torch.autograd.grad(out, (q, k, v), go, retain_graph=True)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    torch.autograd.grad(out, (q, k, v), go, retain_graph=True)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
