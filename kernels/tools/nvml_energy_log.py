#!/usr/bin/env python3
# Used by the fp16-vs-bf16 backward runs of 2026-11-24, in the background while bench_attention_backward_fast
# --power / --ab runs: python3 kernels/tools/nvml_energy_log.py OUT.txt & ... ; kill $!
# NVML board energy counter (mJ) and SM clock every 20 ms: "epoch_s energy_mJ sm_MHz power_mW"
import sys, time, pynvml
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
out = open(sys.argv[1], "w", buffering=1)
while True:
    out.write(f"{time.time():.3f} {pynvml.nvmlDeviceGetTotalEnergyConsumption(h)} "
              f"{pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)} {pynvml.nvmlDeviceGetPowerUsage(h)}\n")
    time.sleep(0.02)
