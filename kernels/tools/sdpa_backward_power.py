#!/usr/bin/env python3
# Used by the fp16-vs-bf16 backward runs of 2026-11-24 (kernels/results/2026-11-24-h*-bwd-fp16-*.txt):
#   python3 kernels/tools/sdpa_backward_power.py D N SECONDS [1 for causal]
# cuDNN SDPA backward back-to-back for SECONDS per dtype (bf16, fp16), inputs drawn like
# bench_attention_backward_fast's (q, k uniform [-2, 2], v, dO uniform [-1, 1]); board energy from NVML.
import sys, time
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import pynvml
d, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
causal = len(sys.argv) > 4 and sys.argv[4] == "1"
pynvml.nvmlInit(); hdl = pynvml.nvmlDeviceGetHandleByIndex(0)
b, h = 1, 16 * 16384 // n
flop = 2.5 * 4.0 * n * n * d * b * h * (0.5 if causal else 1.0)
for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("bf16 (again)", torch.bfloat16), ("fp16 (again)", torch.float16)):
    g = torch.Generator(device="cuda"); g.manual_seed(1)
    mk = lambda lo, hi: (torch.rand(b, h, n, d, device="cuda", generator=g) * (hi - lo) + lo).to(dt)
    q, k, v = mk(-2, 2).requires_grad_(), mk(-2, 2).requires_grad_(), mk(-1, 1).requires_grad_()
    go = mk(-1, 1)
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        def bwd():
            q.grad = k.grad = v.grad = None
            out.backward(go, retain_graph=True)
        for _ in range(3): bwd()
        torch.cuda.synchronize(); time.sleep(1)
        e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(hdl); t0 = time.time(); ms = 0.0; runs = 0
        while time.time() - t0 < secs:
            a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(10): bwd()
            z.record(); z.synchronize(); ms += a.elapsed_time(z); runs += 10
        t1 = time.time(); e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(hdl)
    m = ms / runs
    print(f"sdpa-cudnn {name:14s} d={d} N={n} {'causal' if causal else 'full'}  t0 {t0:.3f} t1 {t1:.3f}  runs {runs}  {m:.3f} ms  "
          f"{flop / m * 1e-9:.1f} TFLOP/s  energy {(e1 - e0) * 1e-3 / runs:.3f} J/run  mean power {(e1 - e0) / (t1 - t0) * 1e-3:.1f} W "
          "(includes the per-run grad resets)", flush=True)
    del q, k, v, go, out; torch.cuda.empty_cache()
