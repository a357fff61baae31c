#!/usr/bin/env python3
"""The RESULT lines of `flashsim-gpu ring` runs (ring_backward_gpu.sh's results.txt files) as one
markdown table: validation, counted / posted / NVLink bytes, launch form, times, overlap, scaling.

    kernels/tools/ring_table.py [--only PREFIX,...] [--default-streams N] [--default-settle MS] [--clocks]
                                RESULTS.txt [...]

A run named twice (a later file repeats a size) keeps its last line. Lines without streams= come
from binaries before --streams (one compute stream), or from runs named streams1-*; --only PREFIX
keeps the runs whose names start with one of the comma-separated prefixes; --default-streams N
names the streams of lines that do not say (binaries before the RESULT line had streams=). Lines
without launch= come from binaries before the step launches (a launch per pair). The column before last is
the ms of untimed runs before each timed batch (`ring --settle-ms`); --default-settle MS names it
for lines that do not say, else "-" (no settling before 2026-11-27's `ecfe3f6`; 200 ms in its runs,
which did not print it yet). The last column says where the one-GPU baseline ran (`ring
--baseline`): gpu0 alone (every line before the option), or all GPUs at once.

--clocks adds what `ring --sm-clock` measured: the median SM clock of the ring's and of the one-GPU
batches (MHz), and the scaling at equal clocks, one-GPU ms x its clock / (P x ring ms x the ring's
clock): what is left of the shortfall once the clocks the two modes held are taken out ("-" for
lines without the clocks)."""
import sys


def parse(path):
    rows = {}
    with open(path) as f:
        for line in f:
            name, _, rest = line.partition(" ")
            if "RESULT " not in rest:
                continue
            kv = dict(p.split("=", 1) for p in rest.split("RESULT ", 1)[1].split() if "=" in p)
            if name.startswith("streams1-"):
                kv.setdefault("streams", "1")
            rows[name] = kv
    return rows


def clock_columns(kv):
    ring, one = float(kv.get("sm_mhz_ring", 0)), float(kv.get("sm_mhz_one", 0))
    if ring <= 0 or one <= 0:
        return " - | - | - |"
    return f" {ring:.0f} | {one:.0f} | {100 * float(kv['eff']) * one / ring:.1f} % |"


def main(args):
    only, default_streams, default_settle, clocks = None, "-", "-", False
    while args and args[0] == "--clocks" or len(args) >= 2 and args[0] in ("--only", "--default-streams",
                                                                         "--default-settle"):
        if args[0] == "--clocks":
            clocks = True
            args = args[1:]
            continue
        if args[0] == "--only":
            only = tuple(args[1].split(","))
        elif args[0] == "--default-streams":
            default_streams = args[1]
        else:
            default_settle = args[1]
        args = args[2:]
    paths = args
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    for p in paths:
        try:
            open(p).close()
        except OSError as e:
            print(f"ring_table.py: {e}", file=sys.stderr)
            return 2
    runs = {}
    for p in paths:
        runs.update({k: v for k, v in parse(p).items() if only is None or k.startswith(only)})
    print("| P | N | d | mask | dir | method | transport | valid (err vs one GPU / float64) | counted = posted B | "
          "NVLink / counted | streams | launch | run ms | one GPU ms | overlap | scaling | settle ms | baseline |" +
          (" ring MHz | one GPU MHz | scaling at equal clocks |" if clocks else ""))
    print("|---:|---:|---:|---|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|" +
          ("---:|---:|---:|" if clocks else ""))
    key = lambda kv: (-int(kv["gpus"]), int(kv["n"]), -int(kv["d"]), kv["mask"], kv["direction"], kv["method"],
                      kv.get("launch", ""))
    for kv in sorted(runs.values(), key=key):
        counted, posted, tx = int(kv["counted"]), int(kv["posted"]), int(kv["nvlink_tx"])
        same = "yes" if counted == posted else "NO"
        nv = f"{tx / counted:.4f}" if counted > 0 and tx >= 0 else "-"
        mask = "causal zig-zag" if kv["mask"] == "causal" and kv["split"] == "zigzag" else kv["mask"]
        print(f"| {kv['gpus']} | {int(kv['n']) // 1024}k | {kv['d']} | {mask} | {'bwd' if kv['direction'] == 'backward' else 'fwd'} | {kv['method']} | "
              f"{kv['transport']} | {kv['valid']} ({float(kv['err_one']):.1e} / {float(kv['err_ref']):.1e}) | "
              f"{counted} ({same}) | {nv} | {kv.get('streams', default_streams)} | {kv.get('launch', 'pair')} | "
              f"{float(kv['ring_ms']):.2f} | {float(kv['one_ms']):.2f} | "
              f"{100 * float(kv['overlap']):.0f} % | {100 * float(kv['eff']):.1f} % | {kv.get('settle_ms', default_settle)} | {kv.get('baseline', 'gpu0')} |"
              + (clock_columns(kv) if clocks else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
