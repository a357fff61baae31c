#!/usr/bin/env python3
# The SM clock and board power while one kind of work runs for a few seconds (issue 32: does the
# clock drop when the tensor cores, exponentials and FMA pipes are busy together?). NVML samples
# every 20 ms in a thread; each workload loops for SECONDS. Prints one line per workload:
# median SM MHz, median W, and the achieved TFLOP/s.
import statistics, sys, threading, time
import pynvml, torch
import torch.nn.functional as F

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
samples, stop = [], threading.Event()

def sample():
    while not stop.is_set():
        samples.append((pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM), pynvml.nvmlDeviceGetPowerUsage(h) / 1e3))
        time.sleep(0.02)

def run(name, fn, flops):
    fn(); torch.cuda.synchronize()
    samples.clear()
    t = threading.Thread(target=sample); stop.clear(); t.start()
    n, t0 = 0, time.time()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    while time.time() - t0 < SECONDS:
        for _ in range(10):
            fn()
        n += 10
        torch.cuda.synchronize()
    end.record(); torch.cuda.synchronize()
    stop.set(); t.join()
    ms = start.elapsed_time(end) / n
    mhz = statistics.median(s[0] for s in samples[len(samples) // 4:])
    w = statistics.median(s[1] for s in samples[len(samples) // 4:])
    print(f"{name:44s} SM {mhz:6.0f} MHz  {w:5.0f} W  {flops / ms / 1e9:6.0f} TFLOP/s", flush=True)

print(torch.cuda.get_device_name(), flush=True)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
run("matmul 8192^3 bf16 (cuBLAS)", lambda: a @ b, 2 * 8192**3)
for d in (64, 128):
    bh, n = 2048 // d * 16384 // 16384, 16384
    q = torch.randn(1, 2048 // d, n, d, device="cuda", dtype=torch.bfloat16); k = torch.randn_like(q); v = torch.randn_like(q)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
        run(f"SDPA cuDNN forward N=16384 d={d} heads={2048 // d}", lambda: F.scaled_dot_product_attention(q, k, v), 4 * n * n * d * (2048 // d))
x = torch.randn(32768, 32768, device="cuda", dtype=torch.float32)
run("exp over 4 GiB fp32 (memory-bound)", lambda: torch.exp(x), 0)
