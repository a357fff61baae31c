#!/usr/bin/env python3
"""The fast backward's two small launches and its cost per block, measured against the time model (CPU only).

  kernels/tools/backward_small_launches.py FLASHSIM NCU_CSV BENCH_CSV

NCU_CSV: a stored ncu run of one backward call (kernels/tools/ncu_backward_vs_cudnn.sh), whose
statistics pass (bwd_fast_prep_kernel) and dQ conversion (bwd_ws_dq_kernel) are timed beside the
model's charge for them at the same size, with and without the fp32 dQ accumulator the first one
zeroes (counted since 2026-12-08). BENCH_CSV: a stored bench_kernels table of H100 rows at one
bh x N; for each d and mask its bf16 backward rows from N = 1024 on are fitted as measured cycles a round =
a x the model's + b (132 blocks a round, the small launches taken out of the measured time at the
model's figure, once with the zeroing and once without), then each row's cycle ratio is printed.
"""
import csv
import io
import json
import math
import os
import subprocess
import sys

STAT_PAD = 128  # kernels/attention_backward.cu kStatPad


def usage(why=""):
    print((why + "\n" if why else "") + "usage: backward_small_launches.py FLASHSIM NCU_CSV BENCH_CSV", file=sys.stderr)
    sys.exit(2)


def predict(flashsim, n, d, heads, causal):
    args = [flashsim, "time", "attention", "--backward", "--n", str(n), "--d", str(d), "--heads", str(heads),
            "--gpu", "h100", "--json"] + (["--causal"] if causal else [])
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)


def zeroing_ms(pred, n, d, heads):
    """What the zeroed fp32 dQ accumulator (rows padded to 128) costs at the HBM rate of the prediction."""
    padded = math.ceil(n / STAT_PAD) * STAT_PAD
    return heads * padded * d * 4 * pred["hbm_ms"] / pred["hbm_bytes"]


def ncu_durations(path):
    """Per kernel name: the durations (us) ncu recorded, in launch order."""
    lines = [l for l in open(path) if not l.startswith("==")]
    out = {}
    for r in csv.DictReader(io.StringIO("".join(lines))):
        if r["Metric Name"] == "Duration":
            scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[r["Metric Unit"]]
            out.setdefault(r["Kernel Name"].split("(")[0].split("<")[0], []).append(
                float(r["Metric Value"].replace(",", "")) * scale)
    return out


def fit(points):
    xs, ys = zip(*points)
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    a = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return a, my - a * mx


def main():
    if len(sys.argv) != 4:
        usage()
    flashsim, ncu_csv, bench_csv = sys.argv[1:]
    for f in (ncu_csv, bench_csv):
        if not os.path.isfile(f):
            usage(f"no such file: {f}")

    times = ncu_durations(ncu_csv)
    prep = times.get("void bwd_fast::bwd_fast_prep_kernel", [])
    conv = times.get("void bwd_fast::bwd_ws_dq_kernel", [])
    if not prep or not conv:
        usage(f"{ncu_csv}: no bwd_fast_prep_kernel / bwd_ws_dq_kernel durations")
    p = predict(flashsim, 16384, 128, 16, False)
    print("small launches at 16x16384x128 (ncu's run): prep %s us, dQ conversion %s us; measured %.1f us, "
          "the model %.1f us (%.1f without the zeroing)"
          % ("/".join(f"{t:.1f}" for t in prep), "/".join(f"{t:.1f}" for t in conv), prep[0] + conv[0],
             p["extra_ms"] * 1e3, (p["extra_ms"] - zeroing_ms(p, 16384, 128, 16)) * 1e3))

    rows = [r for r in csv.DictReader(open(bench_csv))
            if r["op"] == "attn-bwd" and r["dtype"] == "bf16" and float(r.get("sm_mhz") or 0) > 0
            and int(r["shape"].split("x")[1]) >= 1024]  # the timing rows, not the odd-size checks
    if not rows:
        usage(f"{bench_csv}: no bf16 backward rows with an SM clock")
    groups = {}
    for r in rows:
        bh, n, d = (int(x) for x in r["shape"].split("x"))
        causal = r["mask"] == "causal"
        pred = predict(flashsim, n, d, bh, causal)
        rounds = math.ceil(bh * math.ceil(n / 128) / 132)
        mhz = float(r["sm_mhz"])
        for zeroing in (True, False):
            extra = pred["extra_ms"] - (0 if zeroing else zeroing_ms(pred, n, d, bh))
            meas = (float(r["ms"]) - extra) * mhz * 1e3 / rounds
            groups.setdefault((d, r["mask"], zeroing), []).append((n, pred["cycles"] / rounds, meas))
    for (d, mask, zeroing), pts in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], not kv[0][2])):
        a, b = fit([(model, meas) for _, model, meas in pts])
        ratios = " ".join(f"{n}:{meas / model:.2f}" for n, model, meas in sorted(pts))
        print(f"d={d} {mask:6s} {'with' if zeroing else 'without'} the zeroing: measured = {a:.2f} x model + "
              f"{b / 1e3:.1f} k cycles a round; cycles meas/model by N {ratios}")


if __name__ == "__main__":
    main()
