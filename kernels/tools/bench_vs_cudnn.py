#!/usr/bin/env python3
"""The attention rows of bench_kernels CSVs against SDPA's cuDNN backend, a line per CSV.

  kernels/tools/bench_vs_cudnn.py [--bar 1.05] BENCH_CSV...

For each CSV (`bench_kernels --csv`, SDPA measured in the same call): how many attention rows with
a cuDNN figure reach `bar` times its rate, the forward's and the backward's range, the rows below
the bar, and the mean fp16 / bf16 time of the same rows at N >= 4096 (issue 36's table).
Exit 2 on a file that cannot be read or has no such rows.
"""
import csv
import statistics
import sys


def usage(msg):
    print(f"bench_vs_cudnn.py: {msg}\n{__doc__}", file=sys.stderr)
    sys.exit(2)


def attention_rows(path):
    try:
        rows = list(csv.DictReader(open(path)))
    except OSError as e:
        usage(f"{path}: {e.strerror.lower() if e.strerror else e}")
    out = [r for r in rows if r.get("op") in ("attn-fwd", "attn-bwd") and r.get("ref2") == "sdpa-cudnn"
           and r.get("ref2_rate") not in ("", "-", None)]
    if not out:
        usage(f"{path}: no attention rows with an sdpa-cudnn rate")
    return out


def summary(path, bar):
    rows = attention_rows(path)
    ratio = {id(r): float(r["rate"]) / float(r["ref2_rate"]) for r in rows}
    below = sorted((ratio[id(r)], r) for r in rows if ratio[id(r)] < bar)
    span = {op: [ratio[id(r)] for r in rows if r["op"] == op] for op in ("attn-fwd", "attn-bwd")}
    ms = {(r["op"], r["shape"], r["mask"], r["dtype"]): float(r["ms"]) for r in rows}
    fp16_over_bf16 = {"attn-fwd": [], "attn-bwd": []}
    for (op, shape, mask, dtype), t in ms.items():
        bf16 = ms.get((op, shape, mask, "bf16"))
        if dtype == "fp16" and bf16 and int(shape.split("x")[1]) >= 4096:
            fp16_over_bf16[op].append(t / bf16)
    line = f"{path}: {len(rows) - len(below)} of {len(rows)} attention rows >= {bar:.2f}x cuDNN"
    for op, name in (("attn-fwd", "forward"), ("attn-bwd", "backward")):
        if span[op]:
            line += f"; {name} {min(span[op]):.3f}-{max(span[op]):.3f}"
    for op, name in (("attn-fwd", "forward"), ("attn-bwd", "backward")):
        if fp16_over_bf16[op]:
            line += f"; fp16/bf16 time {name} {statistics.mean(fp16_over_bf16[op]):.3f}"
    print(line)
    for q, r in below:
        print(f"  below: {r['op']} {r['shape']} {r['dtype']} {r['mask']} {q:.4f} ({r.get('sm_mhz', '')} MHz)")


def main():
    args = sys.argv[1:]
    bar = 1.05
    if "--bar" in args:
        i = args.index("--bar")
        try:
            bar = float(args[i + 1])
        except (IndexError, ValueError):
            usage("--bar takes a number")
        del args[i:i + 2]
    if not args:
        usage("give one or more bench_kernels CSVs")
    for path in args:
        summary(path, bar)


if __name__ == "__main__":
    main()
