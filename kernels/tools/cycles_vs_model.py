#!/usr/bin/env python3
"""The time model's cycles against the SM cycles ncu measured at its locked clock
(kernels/tools/ncu_cycles.sh), shape by shape: the model's per-cycle figures checked with the
clock taken out (issue 32). Measured: sm__cycles_elapsed.max of the profiled launches (median);
model: `flashsim time attention ... --json` "cycles" (the longest SM) and its tensor unit's busy
fraction beside ncu's tensor-pipe activity.
Usage: cycles_vs_model.py FLASHSIM GPU DIR [--bench CSV] [--unit NAME:rate=R,latency=L ...] [--rescale-under-s on|off]
  DIR: ncu_cycles.sh's output; GPU: h100 or h200; CSV: a bench_kernels CSV of the same GPU, whose
  bf16 rows of the same shapes get the SM clock their measured times imply (the measured cycles
  over the time; the backward's time less the model's two small launches). --unit (repeatable) is
  passed to flashsim: a unit's figures over the preset's. --rescale-under-s: where the measured
  forward rescaled O (flashsim time's option; default off, as every set before 2026-12-01 ran).
"""
import csv
import io
import json
import statistics
import subprocess
import sys
from collections import namedtuple

# ncu_cycles.sh's sizes, in its order: heads x n x d
SIZES = [(16, 16384, 128), (32, 16384, 64), (32, 8192, 128), (64, 8192, 64), (64, 4096, 128), (128, 4096, 64),
         (20, 5120, 128), (14, 9216, 64)]
TENSOR = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def launches(path):
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    out = {}
    for r in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        e = out.setdefault(int(r["ID"]), {"kernel": r["Kernel Name"]})
        e[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    return [out[k] for k in sorted(out)]


def model(flashsim, gpu, args, units=()):
    return json.loads(subprocess.run([flashsim, "time", "attention", *args, *units, "--gpu", gpu, "--json"],
                                     check=True, capture_output=True, text=True).stdout)


# One kernel and shape: measured cycles and tensor-pipe busy %, the model's cycles, tensor busy
# fraction, bound and small launches (the backward's D and dQ conversion, ms).
Row = namedtuple("Row", "kind heads n d mask cycles model_cycles busy model_busy bound extra_ms names")


def compare_rows(flashsim, gpu, folder, units=(), rescale_under_s="off", softmax_under_pv="off"):
    """One Row per kernel and shape; units: --unit options for flashsim."""
    rows = []
    for mask in ("no", "yes"):
        ls = launches(f"{folder}/attn-causal-{mask}.csv")
        fwd, rest = ls[:4 * len(SIZES)], ls[4 * len(SIZES):]
        extra = ["--causal"] if mask == "yes" else []
        for i, (h, n, d) in enumerate(SIZES):
            shape = ["--n", str(n), "--d", str(d), "--heads", str(h), *extra]
            rows.append(("fwd", h, n, d, mask, fwd[4 * i:4 * i + 4], shape))
            # each backward size: its forward (the inputs), then 4 backward launches
            rows.append(("bwd", h, n, d, mask, rest[5 * i + 1:5 * i + 5], [*shape, "--backward"]))
    try:
        fp8 = launches(f"{folder}/fp8.csv")
        rows.append(("fp8", 16, 16384, 128, "no", fp8, ["--n", "16384", "--d", "128", "--heads", "16", "--dtype", "fp8"]))
    except FileNotFoundError:
        pass
    out = []
    for kind, h, n, d, mask, ls, args in rows:
        names = sorted({l["kernel"].split("<")[0].split("::")[-1] for l in ls})
        cyc = statistics.median(l["sm__cycles_elapsed.max"] for l in ls)
        busy = statistics.median(l[TENSOR] for l in ls)
        if kind == "fwd":
            # version 5 ran where the launcher took it (d = 64 causal below N = 8192 until 2026-12-01):
            # no overlap to rescale under; version 6 rescaled where the set says
            v5 = "attn_fwd_wgmma_kernel" in names
            args = [*args, *(["--version", "5"] if v5 else ["--rescale-under-s", rescale_under_s])]
        if kind in ("fwd", "fp8") and "--version" not in args:
            # every stored forward ran with ptxas's wait for P V above the softmax (before the fence of
            # 2026-12-02, kernels/RESULTS.md "Where ptxas puts the wait for P V")
            args = [*args, "--softmax-under-pv", softmax_under_pv]
        if kind == "bwd" and "--causal" in args:
            # the stored backwards ran their causal K/V blocks shortest first (until 2026-12-07)
            args = [*args, "--kv-order", "shortest-first"]
        if kind in ("fwd", "fp8") and "--version" not in args and "--causal" not in args:
            # and over whole Q tiles: the split tail became the launchers' default on 2026-12-07
            args = [*args, "--split-tail", "off"]
        j = model(flashsim, gpu, args, units)
        out.append(Row(kind, h, n, d, mask, cyc, j["cycles"], busy, j["units"]["tensor"]["busy_fraction"], j["bound"],
                       j["extra_ms"], names))
    return out


def pop_options(args, name, usage=__doc__):
    """Removes every `name VALUE` pair from args; returns the values (usage and exit 2 when one lacks
    a value)."""
    values = []
    while name in args:
        i = args.index(name)
        if i + 1 >= len(args):
            fail(usage)
        values.append(args[i + 1])
        del args[i:i + 2]
    return values


def bench_times(path):
    """(kind, heads, n, d, mask) -> ms of a bench_kernels CSV's bf16 attention rows."""
    out = {}
    for r in csv.DictReader(open(path)):
        if r["dtype"] != "bf16" or r["op"] not in ("attn-fwd", "attn-bwd"):
            continue
        h, n, d = (int(x) for x in r["shape"].split("x"))
        out[("bwd" if r["op"] == "attn-bwd" else "fwd", h, n, d, "yes" if r["mask"] == "causal" else "no")] = float(r["ms"])
    return out


def main():
    args = sys.argv[1:]
    units = [opt for spec in pop_options(args, "--unit") for opt in ("--unit", spec)]
    bench_csv = pop_options(args, "--bench")
    bench = bench_times(bench_csv[-1]) if bench_csv else None
    tail = pop_options(args, "--rescale-under-s")
    if tail and tail[-1] not in ("on", "off"):
        fail(f"cycles_vs_model.py: --rescale-under-s takes on or off, not '{tail[-1]}'")
    if len(args) != 3:
        fail(__doc__)
    flashsim, gpu, folder = args
    print(f"{'kernel':4s} {'shape':14s} {'mask':6s} {'meas Mcyc':>9s} {'model Mcyc':>10s} {'meas/model':>10s} "
          f"{'tensor meas':>11s} {'model':>6s}  bound" + ("  (bench ms -> implied MHz)" if bench else ""))
    ratios, clocks = [], {"fwd": [], "bwd": []}
    for r in compare_rows(flashsim, gpu, folder, units, tail[-1] if tail else "off"):
        ratios.append(r.cycles / r.model_cycles)
        line = (f"{r.kind:4s} {r.heads:3d}x{r.n:5d}x{r.d:<3d}  {'causal' if r.mask == 'yes' else 'full':6s} "
                f"{r.cycles / 1e6:9.3f} {r.model_cycles / 1e6:10.3f} {r.cycles / r.model_cycles:10.2f} {r.busy:10.1f}% "
                f"{100 * r.model_busy:5.0f}%  {r.bound}  ({', '.join(r.names)})")
        ms = bench.get((r.kind, r.heads, r.n, r.d, r.mask)) if bench else None
        if ms is not None:
            mhz = r.cycles / (ms - r.extra_ms) / 1e3  # the forward's extra_ms is 0
            clocks[r.kind].append(mhz)
            line += f"  ({ms:.3f} ms -> {mhz:.0f} MHz)"
        print(line)
    print(f"meas/model cycles: {min(ratios):.2f}-{max(ratios):.2f}, geometric mean {statistics.geometric_mean(ratios):.2f} "
          f"over {len(ratios)} rows")
    for kind, c in clocks.items():
        if c:
            print(f"implied clock, {kind}: {min(c):.0f}-{max(c):.0f} MHz, median {statistics.median(c):.0f} over {len(c)} rows")


if __name__ == "__main__":
    try:
        main()
    except FileNotFoundError as e:
        fail(f"cycles_vs_model.py: no such file: {e.filename}")
    except (subprocess.CalledProcessError, StopIteration, KeyError, ValueError) as e:
        fail(f"cycles_vs_model.py: not ncu_cycles.sh's output, or flashsim failed: {e}")
