#!/usr/bin/env python3
"""The tensor cores' round trip from kernels/tools/probe_softmax's output: the clocks a group of
eight m64n128k16 products takes when each group is waited for before the next is issued, less the
clocks a group takes when two are kept in flight (the products' own work), for A in shared memory
(ss) and in registers (rs, as the forward's S and P V). That difference is what the time model's
tensor latency stands for (docs/TIME_MODEL.md), so the line it ends with is the option to try, at
the mean of the two (the model has one latency for both):
    flashsim time ... --unit tensor:latency=L
Usage: tensor_round_trip.py PROBE_OUTPUT.txt
"""
import re
import sys

CASES = {  # operand placement -> (pipelined case, waited-for case), as probe_softmax names them
    "ss": ("products (A in smem) alone", "products (smem), each group waited for"),
    "rs": ("products (A in registers) alone", "products (regs), each group waited for"),
}


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def clocks_per_group(lines):
    """case name -> clk/group (the probe's table: case, FLOP/clk/SM, clk/group, ...)."""
    out = {}
    for line in lines:
        m = re.match(r"^(\S.*?)\s{2,}(\d+\.\d)\s+(\d+\.\d)\s", line)
        if m:
            out[m.group(1).strip()] = float(m.group(3))
    return out


def main():
    if len(sys.argv) != 2:
        fail(__doc__)
    try:
        lines = open(sys.argv[1]).read().splitlines()
    except OSError as e:
        fail(f"tensor_round_trip.py: {e}")
    clk = clocks_per_group(lines)
    device = next((l for l in lines if l.startswith("device:")), "device: ?")
    print(device)
    round_trip = {}
    for kind, (piped, waited) in CASES.items():
        if piped not in clk or waited not in clk:
            fail(f"tensor_round_trip.py: {sys.argv[1]} has no '{piped}' and '{waited}' rows with clk/group "
                 "(probe_softmax from 2026-11-27 on prints them)")
        round_trip[kind] = clk[waited] - clk[piped]
        print(f"{kind}: {clk[waited]:.1f} clk a group waited for, {clk[piped]:.1f} pipelined: round trip "
              f"{round_trip[kind]:.0f} clk")
    # the time model has one tensor latency for both placements: their mean (isa/units.cpp: 60 from
    # the H100's 57 and 64, 2026-11-27)
    print(f"flashsim time ... --unit tensor:latency={(round_trip['ss'] + round_trip['rs']) / 2:.0f}")


if __name__ == "__main__":
    main()
