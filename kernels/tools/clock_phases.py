#!/usr/bin/env python3
"""The SM clock and board power while each phase of kernels/tools/clock_as_found.sh ran: the median
of nvidia-smi's samples (every 20 ms) inside the phase whose power is above a floor (the phase's
set-up and checks run near idle power and are left out).
Usage: clock_phases.py SMI_CSV PHASES_TXT [--floor WATTS]   (default floor 350 W)
  SMI_CSV: nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,... --format=csv,noheader -lms 20,
           or --query-gpu=timestamp,index,clocks.sm,power.draw,... on a machine of several GPUs
           (then each phase has a line per GPU)
  PHASES_TXT: lines "NAME start|end EPOCH_SECONDS" (UTC)
"""
import datetime
import statistics
import sys


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def samples(path):
    """(epoch seconds, GPU index or None, MHz, W) per line"""
    out = []
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        gpu = int(f.pop(1)) if f[1].isdigit() else None  # a bare integer is the index column
        out.append((t.timestamp(), gpu, float(f[1].split()[0]), float(f[2].split()[0])))
    return out


def phases(path):
    out = {}
    for line in open(path):
        name, edge, t = line.split()
        out.setdefault(name, {})[edge] = float(t)
    return out


def main():
    args = sys.argv[1:]
    floor = 350.0
    if "--floor" in args:
        i = args.index("--floor")
        floor = float(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        fail(__doc__)
    smi = samples(args[0])
    gpus = sorted({s[1] for s in smi}, key=lambda g: -1 if g is None else g)
    for name, edges in phases(args[1]).items():
        for gpu in gpus:
            label = name if gpu is None else f"{name} GPU {gpu}"
            inside = [s for s in smi if s[1] == gpu and edges["start"] <= s[0] <= edges["end"]]
            busy = [s for s in inside if s[3] > floor]
            if not busy:
                print(f"{label:10s} {len(inside)} samples, none above {floor:.0f} W (too short to reach the power cap)")
                continue
            print(f"{label:10s} {statistics.median(s[2] for s in busy):6.0f} MHz at "
                  f"{statistics.median(s[3] for s in busy):5.0f} W ({len(busy)} of {len(inside)} samples above {floor:.0f} W)")


if __name__ == "__main__":
    try:
        main()
    except FileNotFoundError as e:
        fail(f"clock_phases.py: no such file: {e.filename}")
    except (IndexError, KeyError, ValueError) as e:
        fail(f"clock_phases.py: not nvidia-smi's CSV and a phases file ({e})")
