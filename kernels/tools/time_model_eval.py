#!/usr/bin/env python3
"""The time model against every stored measurement of issue 32, on the CPU (no GPU needed).

Replays `flashsim time` on
  - the three bench_kernels calls of 2026-11-26 (H100 calls 1 and 2, H200): attention rows at
    N >= 4096 and the matmul rows with m, n >= 4096, bf16 and fp16 (51 rows a call);
  - the `compare` rows at the sizes the model was not looked at on (H100 12 rows, H200 8 rows),
    each with the L2 model's predicted HBM bytes as `--hbm-bytes`;
  - the calls of 2026-11-27 (after the model's figures were set): four bench_kernels CSVs and
    `compare` at four unseen sizes on each GPU;
and prints how many rows are within 15 % (|meas/pred - 1| <= 0.15), then the measured pairs of
kernel versions (kernels/RESULTS.md, issue-32 section) beside the model's ratio, then the model's
cycles against the SM cycles ncu measured at its locked clock (kernels/tools/cycles_vs_model.py),
which take the clock out of the comparison, and last the d = 128 forward's consumer loop without its
producer (kernels/tools/probe_consumer_loop.cu's clocks a tile) beside the model's traces of the same
loops (results/2026-11-27-consumer-loop/c*.fsa, the steady state between 32 and 64 key blocks).

  kernels/tools/time_model_eval.py [FLASHSIM] [-v] [--unit NAME:rate=R,latency=L ...]
  kernels/tools/time_model_eval.py --loops [FLASHSIM] [--unit ...]
      the consumer loops alone (probe_consumer_loop beside the model)
  kernels/tools/time_model_eval.py --replay BENCH_CSV h100|h200 [FLASHSIM] [--bwd-d64-version V]
      one stored bench_kernels CSV row by row (bf16; attention from N = 1024, matmul, softmax): the
      measured ms, the prediction and meas/pred; V: the backward version its binary ran at d = 64
      (6 before 2026-11-26's version 7 there; default: the model's, 7)
  --unit (repeatable): passed to every `flashsim time` call, a unit's figures over the preset's
      (what-if studies, e.g. the tensor latency swept in results/2026-11-27-tensor-latency-sweep/)
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import cycles_vs_model

ARGS = [a for a in sys.argv[1:] if a != "-v"]
UNITS = [opt for spec in cycles_vs_model.pop_options(ARGS, "--unit", __doc__) for opt in ("--unit", spec)]  # for flashsim
REPLAY = None
BWD_D64 = None
if "--bwd-d64-version" in ARGS:
    i = ARGS.index("--bwd-d64-version")
    BWD_D64 = int(ARGS[i + 1])
    del ARGS[i:i + 2]
LOOPS_ONLY = "--loops" in ARGS
if LOOPS_ONLY:
    ARGS.remove("--loops")
if ARGS and ARGS[0] == "--replay":
    if len(ARGS) < 3 or ARGS[2] not in ("h100", "h200") or not os.path.isfile(ARGS[1]):
        print("usage: time_model_eval.py --replay BENCH_CSV h100|h200 [FLASHSIM] [--bwd-d64-version V]"
              + (f" (no such file: {ARGS[1]})" if len(ARGS) > 1 and not os.path.isfile(ARGS[1]) else ""),
              file=sys.stderr)
        sys.exit(2)
    REPLAY = (ARGS[1], ARGS[2])
    ARGS = ARGS[3:]
FLASHSIM = ARGS[0] if ARGS else "build/default/bin/flashsim"
VERBOSE = "-v" in sys.argv
RES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results")
_cache = {}


def predict(args, gpu):
    key = (tuple(args), gpu)
    if key not in _cache:
        out = subprocess.run([FLASHSIM, "time", *args, *UNITS, "--gpu", gpu, "--json"], capture_output=True,
                             text=True, check=True).stdout
        _cache[key] = json.loads(out)
    return _cache[key]


def attention(n, d, heads, *extra, before_2026_12_01=True, before_split=True, before_fence=True, before_kv_order=True):
    # the causal backwards measured before 2026-12-07 (evening) ran their K/V blocks shortest first
    if before_kv_order and "--backward" in extra and "--causal" in extra and "--kv-order" not in extra:
        extra = (*extra, "--kv-order", "shortest-first")
    # the forwards measured before the split tail became the launchers' default (2026-12-07, from
    # N = 8192 under the full mask) ran whole Q tiles only
    if before_split and "--backward" not in extra and "--split-tail" not in extra:
        extra = (*extra, "--split-tail", "off")
    # and before the fence of 2026-12-02 (later) every forward waited for P V before its softmax,
    # where ptxas had hoisted the wait (kernels/RESULTS.md "Where ptxas puts the wait for P V")
    if before_fence and "--backward" not in extra and "--softmax-under-pv" not in extra:
        extra = (*extra, "--softmax-under-pv", "off")
    # the forwards measured before 2026-12-01 rescaled O after P V's wait, unless a row says, and ran
    # d = 64 under the causal mask on version 5 below N = 8192 (the launcher's rule then)
    if before_2026_12_01 and "--backward" not in extra and "--rescale-under-s" not in extra:
        extra = (*extra, "--rescale-under-s", "off")
        if d == 64 and "--causal" in extra and n < 8192 and "--version" not in extra:
            extra = (*extra, "--version", "5")
    return ["attention", "--n", str(n), "--d", str(d), "--heads", str(heads), *extra]


# The binaries of the sets below ran backward version 6 at d = 64 (version 7 there is the launcher's
# since the last set): their rows are predicted with the version they ran.
def bwd_version(op_is_bwd, d, d64_version):
    return ["--version", str(d64_version)] if op_is_bwd and d == 64 and d64_version else []


def bench_row_args(r, min_n, min_mn, d64_version, softmax, before_2026_12_01=True, before_fence=True,
                   before_split=True):
    """`flashsim time` arguments for one bench_kernels CSV row, or None for a row left out:
    attention below N = min_n, matmul below m, n = min_mn, softmax unless asked for."""
    op, shape, mask = r["op"], r["shape"], r["mask"]
    if op in ("attn-fwd", "attn-bwd"):
        h, n, d = map(int, shape.split("x"))
        if n < min_n:
            return None
        return attention(n, d, h, *(["--causal"] if mask == "causal" else []),
                         *(["--backward"] if op == "attn-bwd" else []),
                         *bwd_version(op == "attn-bwd", d, d64_version), before_2026_12_01=before_2026_12_01,
                         before_split=before_split, before_fence=before_fence, before_kv_order=before_split)
    if op == "matmul":
        m, n, k = map(int, shape.split("x"))
        return ["matmul", "--m", str(m), "--n", str(n), "--k", str(k)] if m >= min_mn and n >= min_mn else None
    if op == "softmax" and softmax:
        m, n = map(int, shape.split("x"))
        return ["softmax", "--rows", str(m), "--cols", str(n)]
    return None


def bench_rows(name, bwd_d64_version=6, before_2026_12_01=True, before_fence=True, before_split=True):
    rows = []
    for r in csv.DictReader(open(os.path.join(RES, name))):
        a = bench_row_args(r, 4096, 4096, bwd_d64_version, softmax=False, before_2026_12_01=before_2026_12_01,
                           before_fence=before_fence, before_split=before_split)
        if a is not None:
            rows.append((f"{r['op']} {r['shape']} {r['mask']} {r['dtype']}", a, float(r["ms"])))
    return rows


def compare_rows(name, d64_version=6, before_2026_12_01=True, before_fence=True, before_split=True):
    rows = []
    for r in csv.DictReader(open(os.path.join(RES, name))):
        h, n, d = map(int, r["size"].split()[0].split("x"))
        bwd = r["schedule"].startswith("bwd")
        fp8 = ["--dtype", "fp8"] if r["schedule"] == "attn-fp8" else []
        a = attention(n, d, h, *(["--causal"] if r["causal"] == "1" else []), *(["--backward"] if bwd else []),
                      *bwd_version(bwd, d, d64_version), *fp8, before_2026_12_01=before_2026_12_01,
                      before_split=before_split, before_fence=before_fence, before_kv_order=before_split)
        a += ["--hbm-bytes", str(int(r["predicted_read"]) + int(r["predicted_written"]))]
        rows.append((f"{r['schedule']} {r['size']}", a, float(r["time_ms"])))
    return rows



def landed_bench_rows(name, after_2026_12_07=False):
    """bench_rows for the kernels as landed since the fence of 2026-12-02 (the launchers' defaults);
    after_2026_12_07: measured with the split tail as the default at d = 128 from N = 8192 and the
    causal backward's blocks longest first (2026-12-07, evening, on)"""
    return bench_rows(name, bwd_d64_version=None, before_2026_12_01=False, before_fence=False,
                      before_split=not after_2026_12_07)


def landed_compare_rows(name, after_2026_12_07=False):
    """compare_rows for the same kernels"""
    return compare_rows(name, d64_version=None, before_2026_12_01=False, before_fence=False,
                        before_split=not after_2026_12_07)

SETS = [("H100 bench_kernels call 1", "h100", bench_rows("2026-11-26-h100-time-bench_kernels-call1.csv")),
        ("H100 bench_kernels call 2", "h100", bench_rows("2026-11-26-h100-time-bench_kernels-call2.csv")),
        ("H200 bench_kernels", "h200", bench_rows("2026-11-26-h200-time-bench_kernels.csv")),
        ("H100 bench_kernels, backward v7 at d = 64 (not tuned on)", "h100",
         bench_rows("2026-11-26-h100-bwd-v7-d64-bench_kernels-call3.csv", bwd_d64_version=None)),
        ("H100 compare, other sizes", "h100", compare_rows("2026-11-26-h100-time-compare-other-sizes.csv")),
        ("H200 compare, other sizes", "h200", compare_rows("2026-11-26-h200-time-compare-other-sizes.csv")),
        # 2026-11-27: the d = 128 forward with its exponentials first, after the model's last change
        ("H100 bench_kernels 2026-11-27 (not tuned on)", "h100",
         bench_rows("2026-11-27-h100-exps-first-call3/bench_kernels.csv", bwd_d64_version=None)),
        ("H200 bench_kernels 2026-11-27 (not tuned on)", "h200",
         bench_rows("2026-11-27-h200-exps-first-probe/bench_kernels.csv", bwd_d64_version=None)),
        ("H100 bench_kernels 2026-11-27, call 4", "h100",
         bench_rows("2026-11-27-h100-new-model/bench_kernels.csv", bwd_d64_version=None)),
        ("H200 bench_kernels 2026-11-27, call 5", "h200",
         bench_rows("2026-11-27-h200-new-model/bench_kernels.csv", bwd_d64_version=None)),
        ("H100 compare at unseen sizes 2026-11-27", "h100", compare_rows("2026-11-27-h100-new-model/compare.csv")),
        # measured after the tensor latency was (60 cycles, probe_softmax)
        ("H100 bench_kernels 2026-11-27, after the latency (not tuned on)", "h100",
         bench_rows("2026-11-27-h100-bench-latency60/bench_kernels.csv", bwd_d64_version=None)),
        ("H200 compare at unseen sizes 2026-11-27", "h200", compare_rows("2026-11-27-h200-new-model/compare.csv")),
        # the same kernels again, with the SM clock after each timed run (bench_kernels --sm-clock)
        ("H100 bench_kernels 2026-11-27, night, run 1 (not tuned on)", "h100",
         bench_rows("2026-11-27-bench-sm-clock/h100-bench_kernels-run1.csv", bwd_d64_version=None)),
        ("H100 bench_kernels 2026-11-27, night, run 2 (not tuned on)", "h100",
         bench_rows("2026-11-27-bench-sm-clock/h100-bench_kernels-run2.csv", bwd_d64_version=None)),
        ("H200 bench_kernels 2026-11-27, night (not tuned on)", "h200",
         bench_rows("2026-11-27-bench-sm-clock/h200-bench_kernels.csv", bwd_d64_version=None)),
        # the launchers with O's rescale under S_j and d = 64 causal on version 6 from N = 4096
        ("H200 bench_kernels 2026-12-01 (not tuned on)", "h200",
         bench_rows("2026-12-01-h200-tail/bench_kernels-call-d.csv", bwd_d64_version=None, before_2026_12_01=False)),
        ("H200 compare at unseen sizes 2026-12-01", "h200",
         compare_rows("2026-12-01-h200-tail/compare-call-c.csv", d64_version=None, before_2026_12_01=False)),
        # the d = 128 launchers with each row's maximum as a tree (a tile operation cannot tell)
        ("H200 bench_kernels 2026-12-02, call c (not tuned on)", "h200",
         bench_rows("2026-12-02-h200-tree-max/bench_kernels-call-c.csv", bwd_d64_version=None, before_2026_12_01=False)),
        ("H200 bench_kernels 2026-12-02, call d (not tuned on)", "h200",
         bench_rows("2026-12-02-h200-tree-max/bench_kernels-call-d.csv", bwd_d64_version=None, before_2026_12_01=False)),
        # the same launchers (the split tail built in, off), SDPA of that call
        ("H200 bench_kernels 2026-12-02, split-tail call c (not tuned on)", "h200",
         bench_rows("2026-12-02-h200-split-tail/bench_kernels-call-c.csv", bwd_d64_version=None, before_2026_12_01=False)),
        # the d = 128 launchers with the softmax kept under P V by a fence (the model's default since)
        ("H200 bench_kernels 2026-12-02, the fence, call e (not tuned on)", "h200",
         landed_bench_rows("2026-12-02-h200-wait-after-softmax/bench_kernels-call-e.csv")),
        ("H200 bench_kernels 2026-12-02, the fence, call f (not tuned on)", "h200",
         landed_bench_rows("2026-12-02-h200-wait-after-softmax/bench_kernels-call-f.csv")),
        ("H200 bench_kernels 2026-12-07, the landed kernels again (not tuned on)", "h200",
         landed_bench_rows("2026-12-07-h100/bench_kernels-h200-call-short.csv")),
        ("H200 compare at unseen sizes 2026-12-02 (the landed kernels)", "h200",
         landed_compare_rows("2026-12-02-h200-bwd-fence/compare-call-b.csv")),
        # the same landed kernels on an H100, the first H100 calls since 2026-11-27
        ("H100 bench_kernels 2026-12-07, call a (not tuned on)", "h100",
         landed_bench_rows("2026-12-07-h100/bench_kernels-h100-call-a.csv")),
        ("H100 bench_kernels 2026-12-07, call b (not tuned on)", "h100",
         landed_bench_rows("2026-12-07-h100/bench_kernels-h100-call-b.csv")),
        ("H100 compare at unseen sizes 2026-12-07", "h100",
         landed_compare_rows("2026-12-07-h100/compare-h100-call-a.csv")),
        # measured after the model's shared-memory staging (2bf0b20), predicted here by it
        ("H100 bench_kernels 2026-12-07, call d (after the staging; not tuned on)", "h100",
         landed_bench_rows("2026-12-07-h100/bench_kernels-h100-call-d.csv")),
        ("H100 compare at unseen sizes 2026-12-07, call d (after the staging)", "h100",
         landed_compare_rows("2026-12-07-h100/compare-h100-call-d.csv")),
        ("H100 compare at unseen sizes 2026-12-07, FP8", "h100",
         landed_compare_rows("2026-12-07-h100/compare-fp8-h100-call-a.csv")),
        # the split tail as the default at d = 128 from N = 8192, the causal backward longest first
        # (tree 60466b1; measured after the model's matching change, nothing in it fitted to them)
        ("H100 bench_kernels 2026-12-07 evening, call b (not tuned on)", "h100",
         landed_bench_rows("2026-12-07-h100-split-default/bench_kernels-call-b.csv", after_2026_12_07=True)),
        # the landed tree b9b53a3, two calls at night (the second asked for an H200 and got the H100)
        ("H100 bench_kernels 2026-12-07 night, call a (not tuned on)", "h100",
         landed_bench_rows("2026-12-07-night/bench_kernels-call-a.csv", after_2026_12_07=True)),
        ("H100 bench_kernels 2026-12-07 night, call b (not tuned on)", "h100",
         landed_bench_rows("2026-12-07-night/bench_kernels-call-b.csv", after_2026_12_07=True)),
        ("H100 bench_kernels 2026-12-07 night, call d (not tuned on)", "h100",
         landed_bench_rows("2026-12-07-night/bench_kernels-call-d.csv", after_2026_12_07=True)),
        ("H100 compare 2026-12-07 night: the split tail's bytes, the causal backward longest first", "h100",
         landed_compare_rows("2026-12-07-night/compare-split-call-a.csv", after_2026_12_07=True)
         + landed_compare_rows("2026-12-07-night/compare-bwd-call-a.csv", after_2026_12_07=True))]


def softmax_under_pv(*extra):
    """the d = 128 fence pair at N = 8192, 32 heads: the softmax after P V's wait (off), then under it (on)"""
    return tuple(attention(8192, 128, 32, *extra, "--softmax-under-pv", on, before_2026_12_01=False)
                 for on in ("off", "on"))

# (label, slower configuration's args, faster configuration's args, measured ratio of times, source)
PAIRS = [
    ("forward d=128 N=16384: version 6 over 5", attention(16384, 128, 16, "--version", "5"),
     attention(16384, 128, 16, "--version", "6"), 694 / 563, "2026-11-24"),
    ("forward d=128 N=16384 causal: version 6 over 5", attention(16384, 128, 16, "--causal", "--version", "5"),
     attention(16384, 128, 16, "--causal", "--version", "6"), 681 / 490, "2026-11-26"),
    ("forward d=64 N=16384: version 6 over 5", attention(16384, 64, 32, "--version", "5"),
     attention(16384, 64, 32, "--version", "6"), 552 / 470, "2026-11-25"),
    ("forward d=64 N=1024: version 6 over 5", attention(1024, 64, 512, "--version", "5"),
     attention(1024, 64, 512, "--version", "6"), 422 / 427, "2026-11-25 variants, call 2"),
    ("forward d=64 N=1024 causal: version 6 over 5", attention(1024, 64, 512, "--causal", "--version", "5"),
     attention(1024, 64, 512, "--causal", "--version", "6"), 264 / 317, "2026-11-25 variants, call 2"),
    ("backward d=128 N=16384: version 7 over 6", attention(16384, 128, 16, "--backward", "--version", "6"),
     attention(16384, 128, 16, "--backward", "--version", "7"), 1.07, "2026-11-25 (+4 to +10 %)"),
    ("backward d=64 N=16384: version 7 over 6", attention(16384, 64, 16, "--backward", "--version", "6"),
     attention(16384, 64, 16, "--backward", "--version", "7"), 586.2 / 522.2, "2026-11-26 --ab-table 8, call 1"),
    ("forward d=128 N=16384: ping-pong on over off", attention(16384, 128, 16, "--pingpong", "off"),
     attention(16384, 128, 16, "--pingpong", "on"), 680 / 693, "2026-11-26 variants (persistent)"),
    ("forward d=128 N=4096: ping-pong on over off", attention(4096, 128, 64, "--pingpong", "off"),
     attention(4096, 128, 64, "--pingpong", "on"), 648.6 / 648.5, "2026-11-26 variants (sched 0)"),
    # kernels/RESULTS.md, "FP8, continued" (2026-11-26) and the exps-first section (2026-11-27)
    ("FP8 d=128 N=16384: 224-key over 128-key tiles", attention(16384, 128, 16, "--dtype", "fp8", "--key-tile", "128"),
     attention(16384, 128, 16, "--dtype", "fp8", "--key-tile", "224"), 1.03, "2026-11-26 (1.028-1.035)"),
    ("FP8 d=128 N=4096: 224-key over 128-key tiles", attention(4096, 128, 64, "--dtype", "fp8", "--key-tile", "128"),
     attention(4096, 128, 64, "--dtype", "fp8", "--key-tile", "224"), 0.992, "2026-11-26"),
    ("FP8 d=128 N=16384: three consumers over two", attention(16384, 128, 16, "--dtype", "fp8", "--key-tile", "128"),
     attention(16384, 128, 16, "--dtype", "fp8", "--key-tile", "64", "--consumers", "3"), 0.882, "2026-11-26"),
    ("FP8 d=128 N=16384: ping-pong over none, 224 keys", attention(16384, 128, 16, "--dtype", "fp8", "--key-tile", "224"),
     attention(16384, 128, 16, "--dtype", "fp8", "--key-tile", "224", "--pingpong", "on"), 0.95, "2026-11-26 (4-7 % slower)"),
    ("forward d=128 N=16384: 144-key over 128-key tiles", attention(16384, 128, 16, "--key-tile", "128"),
     attention(16384, 128, 16, "--key-tile", "144"), 0.96, "2026-11-26 (0.948-0.974)"),
    ("forward d=128 N=4096 causal: exps first over exp-then-add", attention(4096, 128, 64, "--causal"),
     attention(4096, 128, 64, "--causal"), 618.3 / 587.4, "2026-11-27 H100 call 1 (1.02-1.05)"),
    # kernels/RESULTS.md, "FP8: the row sums on the tensor cores" (2026-11-27; predicted before the run)
    ("FP8 d=128 N=16384: row sums on the tensor cores", attention(16384, 128, 16, "--dtype", "fp8"),
     attention(16384, 128, 16, "--dtype", "fp8", "--sums-on-tensor"), 1.009, "2026-11-27 (1.00-1.01)"),
    ("FP8 d=128 N=16384: the same, 128-key tiles", attention(16384, 128, 16, "--dtype", "fp8", "--key-tile", "128"),
     attention(16384, 128, 16, "--dtype", "fp8", "--key-tile", "128", "--sums-on-tensor"), 1.016, "2026-11-27"),
    ("FP8 d=128 N=16384 causal: the same, 128-key tiles",
     attention(16384, 128, 16, "--causal", "--dtype", "fp8", "--key-tile", "128"),
     attention(16384, 128, 16, "--causal", "--dtype", "fp8", "--key-tile", "128", "--sums-on-tensor"), 1.039,
     "2026-11-27"),
    # kernels/RESULTS.md, "The d = 128 forward without its copies and without its handshakes" (2026-11-29,
    # H200): variants a tile operation cannot tell apart, so the model predicts a tie for each
    ("forward d=128 N=8192: K/V barriers tested early", attention(8192, 128, 32), attention(8192, 128, 32),
     684.8 / 697.7, "2026-11-29 H200, dropped"),
    ("forward d=128 N=8192 causal: the same", attention(8192, 128, 32, "--causal"), attention(8192, 128, 32, "--causal"),
     625.2 / 669.7, "2026-11-29 H200, dropped"),
    ("forward d=128 N=8192: K/V descriptors once a buffer", attention(8192, 128, 32), attention(8192, 128, 32),
     694.65 / 695.2, "2026-11-29 H200, dropped"),
    ("forward d=128 N=8192: the mask test only where needed", attention(8192, 128, 32), attention(8192, 128, 32),
     661.9 / 699.4, "2026-11-29 H200, dropped"),
    # kernels/RESULTS.md, "O's rescale under the next S" (2026-12-01, H200; the model run after the
    # measurements, nothing in it changed to fit them): SM clocks of the previous kernel over the new
    ("forward d=128 N=8192: O's rescale under S_j", attention(8192, 128, 32, "--rescale-under-s", "off"),
     attention(8192, 128, 32, "--rescale-under-s", "on"), 3.098 / 3.050, "2026-12-01 H200 call b"),
    ("forward d=128 N=16384 causal: the same", attention(16384, 128, 16, "--causal", "--rescale-under-s", "off"),
     attention(16384, 128, 16, "--causal", "--rescale-under-s", "on"), 3.152 / 3.061, "2026-12-01 H200 call b"),
    ("forward d=64 N=8192: the same", attention(8192, 64, 64, "--rescale-under-s", "off"),
     attention(8192, 64, 64, "--rescale-under-s", "on"), 3.913 / 3.770, "2026-12-01 H200 call b"),
    ("forward d=64 N=16384 causal: the same", attention(16384, 64, 32, "--causal", "--rescale-under-s", "off"),
     attention(16384, 64, 32, "--causal", "--rescale-under-s", "on"), 4.359 / 4.069, "2026-12-01 H200 call b"),
    ("FP8 d=128 N=16384: the same (dropped)", attention(16384, 128, 16, "--dtype", "fp8"),
     attention(16384, 128, 16, "--dtype", "fp8", "--rescale-under-s", "on"), 879.2 / 919.4, "2026-12-01 H200 call b"),
    ("forward d=64 N=4096 causal: version 6 over 5", attention(4096, 64, 128, "--causal", "--version", "5"),
     attention(4096, 64, 128, "--causal", "--version", "6", "--rescale-under-s", "on"), 1.253 / 1.180,
     "2026-12-01 H200 call b"),
    # kernels/RESULTS.md, "Each row's maximum as a tree" (2026-12-02, H200; SM clocks of the chain over
    # the tree, or of version 7 over its variant, summed over two runs): instruction orders inside a
    # tile operation, so the model predicts a tie for each
    ("forward d=128 N=4096: row maximum as a tree", attention(4096, 128, 64, before_2026_12_01=False),
     attention(4096, 128, 64, before_2026_12_01=False), (1.570 + 1.562) / (1.555 + 1.557), "2026-12-02 H200 call c"),
    ("forward d=128 N=16384: the same", attention(16384, 128, 16, before_2026_12_01=False),
     attention(16384, 128, 16, before_2026_12_01=False), 6.024 / 6.013, "2026-12-02 H200 call c, run 1"),
    ("forward d=64 N=8192: the same (dropped)", attention(8192, 64, 64, before_2026_12_01=False),
     attention(8192, 64, 64, before_2026_12_01=False), (3.772 + 3.763) / (3.853 + 3.798), "2026-12-02 H200 call b"),
    ("backward d=128 N=16384: statistics read early (dropped)", attention(16384, 128, 16, "--backward"),
     attention(16384, 128, 16, "--backward"), (562.5 + 561.2) / (566.1 + 565.2), "2026-12-02 H200 call a, sustained"),
    # kernels/RESULTS.md, "The last round split along the keys" (2026-12-02, H200 call c, ms of the kStatic
    # kernel over the launcher with FLASHSIM_FWD_SPLIT=1, one run, both near 1980 MHz): kept opt-in
    ("forward d=128 N=8192: the last round split along the keys", attention(8192, 128, 32, before_2026_12_01=False),
     attention(8192, 128, 32, "--split-tail", "on", before_2026_12_01=False), 1.530 / 1.521, "2026-12-02 H200 call c"),
    ("forward d=128 N=2048: the same", attention(2048, 128, 128, before_2026_12_01=False),
     attention(2048, 128, 128, "--split-tail", "on", before_2026_12_01=False), 0.414 / 0.436, "2026-12-02 H200 call c"),
    # the launcher without and with FLASHSIM_FWD_SPLIT=1, two runs each in one call (mean Mclk)
    ("forward d=128 N=8192: the split, H100", attention(8192, 128, 32, before_2026_12_01=False),
     attention(8192, 128, 32, "--split-tail", "on", before_2026_12_01=False), (3.087 + 3.027) / (3.023 + 2.998),
     "2026-12-07 H100 call b"),
    # kernels/RESULTS.md, "Where ptxas puts the wait for P V" (2026-12-02, later, H200; SM clocks of the
    # kernel with ptxas's wait over the one with the fence, same run): kept at d = 128, dropped at
    # d = 64 and for FP8 (ms there, same clock)
    ("forward d=128 N=8192: the softmax kept under P V", *softmax_under_pv(), 2.994 / 2.973, "2026-12-02 H200 call e"),
    ("forward d=128 N=8192 causal: the same", *softmax_under_pv("--causal"), 1.570 / 1.535, "2026-12-02 H200 call e"),
    # the same pair on an H100 (2026-12-07 call b, Mclk of the kernel before the fence over the launcher's)
    ("forward d=128 N=8192: the same, H100", *softmax_under_pv(), 3.095 / 3.048, "2026-12-07 H100 call b"),
    ("forward d=128 N=8192 causal: the same, H100", *softmax_under_pv("--causal"), 1.604 / 1.585,
     "2026-12-07 H100 call b"),
    # kernels/RESULTS.md, "The split tail as the default" (2026-12-07 evening, H100 call a, mean Mclk of
    # four runs each, FLASHSIM_FWD_SPLIT=0 over the split; call b, ms of the backward built before the
    # order change over the new one, --d128's four causal bf16 N = 8192 runs each, ABAB)
    ("forward d=128 N=16384: the split, H100", attention(16384, 128, 16, before_2026_12_01=False, before_fence=False),
     attention(16384, 128, 16, "--split-tail", "on", before_2026_12_01=False, before_fence=False),
     (5.615 + 5.855 + 5.625 + 5.854) / (5.521 + 5.772 + 5.503 + 5.899), "2026-12-07 H100 evening call a"),
    ("forward d=64 N=16384: the split (off at d = 64)", attention(16384, 64, 32, before_2026_12_01=False, before_fence=False),
     attention(16384, 64, 32, "--split-tail", "on", before_2026_12_01=False, before_fence=False),
     (7.317 + 7.418 + 7.331 + 7.321) / (7.468 + 7.405 + 7.480 + 7.414), "2026-12-07 H100 evening call a"),
    ("backward d=128 N=8192 causal: longest blocks first", attention(8192, 128, 32, "--backward", "--causal"),
     attention(8192, 128, 32, "--backward", "--causal", before_kv_order=False),
     (2.470 + 2.467 + 2.472 + 2.488) / (2.342 + 2.354 + 2.338 + 2.343), "2026-12-07 H100 evening call b"),
    # kernels/RESULTS.md, "Two consumers at d = 64 on short causal rows" (2026-12-07 night, H100 call a,
    # `--variants 64 ... 1024c 2048c` twice: ms of version 5, the launcher, over two consumers on
    # 128-row tiles in causal pairs, Q in registers, 2 stages): the model's pick, dropped
    ("forward d=64 N=1024 causal: two consumers on 128-row pairs over version 5 (dropped)",
     attention(1024, 64, 512, "--causal", "--version", "5", before_2026_12_01=False, before_fence=False,
               before_split=False, before_kv_order=False),
     attention(1024, 64, 512, "--causal", "--version", "6", "--consumers", "2", before_2026_12_01=False,
               before_fence=False, before_split=False, before_kv_order=False),
     (0.212 + 0.211) / (0.219 + 0.218), "2026-12-07 H100 night call a"),
    ("forward d=64 N=2048 causal: the same (dropped)",
     attention(2048, 64, 256, "--causal", "--version", "5", before_2026_12_01=False, before_fence=False,
               before_split=False, before_kv_order=False),
     attention(2048, 64, 256, "--causal", "--version", "6", "--consumers", "2", before_2026_12_01=False,
               before_fence=False, before_split=False, before_kv_order=False),
     (0.352 + 0.353) / (0.371 + 0.371), "2026-12-07 H100 night call a"),
    ("forward d=64 N=8192: the same (dropped)", attention(8192, 64, 64, "--softmax-under-pv", "off",
     before_2026_12_01=False), attention(8192, 64, 64, "--softmax-under-pv", "on", before_2026_12_01=False),
     3.734 / 3.853, "2026-12-02 H200 call d"),
    ("forward fp8 N=16384: the same (dropped)", attention(16384, 128, 16, "--dtype", "fp8", "--softmax-under-pv", "off",
     before_2026_12_01=False), attention(16384, 128, 16, "--dtype", "fp8", "--softmax-under-pv", "on",
                                         before_2026_12_01=False), 2.382 / 2.465, "2026-12-02 H200 call d"),
]


def side(ratio):
    """A pair's speed-up as 1 (faster by more than 3 %), 0 (within 3 %) or -1 (slower)."""
    return 0 if abs(ratio - 1) <= 0.03 else (1 if ratio > 1 else -1)


def replay(path, gpu):
    """Every bf16 row of one bench_kernels CSV beside the model's prediction; where the CSV has the
    SM clock after the timed runs (sm_mhz, bench_kernels --sm-clock), also the cycles the row took
    against the model's cycles at the preset's clock."""
    rows = []
    for r in csv.DictReader(open(path)):
        a = None if r["dtype"] == "fp16" else bench_row_args(r, 1024, 0, BWD_D64, softmax=True)
        if a is not None:
            rows.append((r["op"], r["shape"], r["mask"], a, float(r["ms"]), float(r.get("sm_mhz") or 0)))
    with ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as ex:
        preds = list(ex.map(lambda row: predict(row[3], gpu), rows))
    for (op, shape, mask, _, ms, mhz), p in zip(rows, preds):
        line = f"{op:9s} {shape:16s} {mask:6s} meas {ms:8.3f} pred {p['predicted_ms']:8.3f} meas/pred {ms / p['predicted_ms']:5.2f}"
        if mhz > 0 and p.get("cycles"):
            # the SMs' cycles at the sampled clock against the model's cycles on the busiest SM
            line += f"  {mhz:5.0f} MHz cycles meas/pred {ms * 1e-3 * mhz * 1e6 / p['cycles']:5.2f}"
        print(line)


def print_consumer_loops():
    print("the consumer loop without its producer, clocks a tile (probe_consumer_loop, H100, 2026-11-27):")
    for (case, probe), model, compiled in consumer_loops():
        line = f"  {case:36s} probe {probe:7.1f}  model {model:7.1f}  probe/model {probe / model:4.2f}"
        if compiled is not None:
            # the probe's kernels had ptxas's wait for P V above the softmax (2026-12-02): the trace with it
            line += f"  as compiled {compiled:7.1f}  probe/model {probe / compiled:4.2f}"
        print(line)


def no_warp_specialization(overlap):
    """FA3's ablation without a producer warp (d = 128, N = 16384, 16 heads), the overlap on or off"""
    return attention(16384, 128, 16, "--warp-specialized", "off", "--overlap", overlap, before_fence=False)


def main():
    if REPLAY:
        replay(*REPLAY)
        return
    if LOOPS_ONLY:
        print_consumer_loops()
        return
    jobs = [(a, g) for _, g, rows in SETS for _, a, _ in rows] + [(a, "h100") for p in PAIRS for a in p[1:3]]
    jobs += [(attention(16384, 128, 16, "--pingpong", pp, "--overlap", ov, before_fence=False), "h100") for pp in ("on", "off")
             for ov in ("on", "off")]
    jobs += [(no_warp_specialization(ov), "h100") for ov in ("on", "off")]
    with ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as ex:
        list(ex.map(lambda j: predict(*j), jobs))
    inside_all = rows_all = 0
    for name, gpu, rows in SETS:
        inside = 0
        for label, a, ms in rows:
            p = predict(a, gpu)["predicted_ms"]
            q = ms / p
            inside += abs(q - 1) <= 0.15
            if VERBOSE:
                print(f"  {label:42s} meas {ms:8.3f} pred {p:8.3f} meas/pred {q:5.2f}{'' if abs(q - 1) <= 0.15 else '  outside'}")
        print(f"{name}: {inside} of {len(rows)} within 15 %")
        inside_all, rows_all = inside_all + inside, rows_all + len(rows)
    print(f"every stored set together: {inside_all} of {rows_all} rows within 15 %")
    print("pairs (H100 preset; speed-up of the second configuration, > 1: it is faster):")
    agreeing = three_way = 0
    for label, slow, fast, measured, source in PAIRS:
        model = predict(slow, "h100")["predicted_ms"] / predict(fast, "h100")["predicted_ms"]
        agree = (model > 1) == (measured > 1) if abs(measured - 1) > 0.03 else abs(model - 1) <= 0.03
        agreeing += agree
        three_way += side(model) == side(measured)
        print(f"  {label:48s} measured {measured:5.2f} ({source}), model {model:5.2f}  {'agrees' if agree else 'DISAGREES'}")
    # the rule above lets a predicted tie agree with a measured loss; the stricter count sorts both
    # into faster, within 3 %, slower
    print(f"pairs in the measured order: {agreeing} of {len(PAIRS)}; faster / within 3 % / slower alike on both "
          f"sides: {three_way} of {len(PAIRS)}")
    # FlashAttention-3's pipelining ablation on the tile machine (d = 128, N = 16384, 16 heads)
    flops = 4 * 16384 * 16384 * 128 * 16
    tf = {}
    for pp in ("on", "off"):
        for ov in ("on", "off"):
            p = predict(attention(16384, 128, 16, "--pingpong", pp, "--overlap", ov, before_fence=False), "h100")
            tf[pp, ov] = flops / p["predicted_ms"] / 1e9
    print("FA3 ablation on the tile machine (H100 preset, TFLOP/s): both %.0f, ping-pong only %.0f, overlap only %.0f, "
          "neither %.0f" % (tf["on", "on"], tf["on", "off"], tf["off", "on"], tf["off", "off"]))
    # the paper's own two knobs: the producer warp (warp specialization) and the intra-warpgroup overlap
    for ov in ("on", "off"):
        p = predict(no_warp_specialization(ov), "h100")
        tf["no ws", ov] = flops / p["predicted_ms"] / 1e9
    print("FA3 ablation as the paper ran it (TFLOP/s; the paper 661, 582, 570 on an H100): both %.0f, no intra-warpgroup "
          "pipelining %.0f, no warp specialization %.0f (neither %.0f)"
          % (tf["on", "on"], tf["on", "off"], tf["no ws", "on"], tf["no ws", "off"]))
    # the model's cycles at a clock ncu locks (2026-11-27): no power-cap clock in the comparison
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    for gpu in ("h100", "h200"):
        folder = os.path.join(RES, "2026-11-27-cycles-locked-clock", f"{gpu}-cyc")
        q = [r.cycles / r.model_cycles for r in cycles_vs_model.compare_rows(FLASHSIM, gpu, folder, UNITS)]
        gm = statistics.geometric_mean(q)
        print(f"{gpu.upper()} cycles at ncu's locked clock, 2026-11-27: measured / model {min(q):.2f}-{max(q):.2f}, "
              f"geometric mean {gm:.2f} over {len(q)} rows (the time rows above come close only because "
              f"the kernels hold a higher clock than the preset's)")
    print_consumer_loops()


# probe_consumer_loop's cases and the model's traces of the same loops
LOOPS = [("kernel order, one consumer", "c1_kernel.fsa"), ("kernel order, two consumers", "c2_kernel.fsa"),
         ("turns, two consumers", "c2_turns.fsa"), ("FA2 order, one consumer", "c1_fa2.fsa"),
         ("FA2 order, two consumers", "c2_fa2.fsa")]
# the same loops as ptxas compiled the probe (its wait for P V before the softmax, 2026-12-02)
COMPILED = {"kernel order, one consumer": "c1_kernel_compiled.fsa", "kernel order, two consumers": "c2_kernel_compiled.fsa",
            "turns, two consumers": "c2_turns_compiled.fsa"}


def unit_lines(units):
    """--unit NAME:key=v,key=v options as the trace's .unit lines"""
    specs = units[1::2]
    return "".join(f".unit {spec.split(':', 1)[0]} {' '.join(spec.split(':', 1)[1].split(','))}\n" for spec in specs)


def loop_clocks(path):
    """the model's clocks a tile in the steady state of a loop trace: (N = 8192 - N = 4096) / 32"""
    text = open(path).read().replace(".units h100\n", ".units h100\n" + unit_lines(UNITS), 1)
    cycles = []
    with tempfile.NamedTemporaryFile("w", suffix=".fsa") as f:
        f.write(text)
        f.flush()
        for n in (4096, 8192):
            run = subprocess.run([FLASHSIM, "run", f.name, "--no-table", "--param", f"N={n}"], capture_output=True,
                                 text=True, check=True).stdout
            cycles.append(next(float(l.split()[1]) for l in run.splitlines() if l.startswith("predicted")))
    return (cycles[1] - cycles[0]) / 32


def consumer_loops():
    """((case, probe clocks a tile), model clocks a tile, model clocks as compiled or None) for each loop"""
    folder = os.path.join(RES, "2026-11-27-consumer-loop")
    compiled = os.path.join(RES, "2026-12-02-h200-wait-after-softmax")
    probe = {}
    for line in open(os.path.join(folder, "h100-consumer-loop-3.txt")):
        for case, _ in LOOPS:
            if line.startswith(case + " "):
                probe[case] = float(line[len(case):].split()[0])
    out = []
    for case, trace in LOOPS:
        as_compiled = loop_clocks(os.path.join(compiled, COMPILED[case])) if case in COMPILED else None
        out.append(((case, probe[case]), loop_clocks(os.path.join(folder, trace)), as_compiled))
    return out


if __name__ == "__main__":
    main()
