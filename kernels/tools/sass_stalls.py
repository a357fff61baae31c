#!/usr/bin/env python3
"""Warp-state samples of one kernel, per SASS instruction (ncu --page source --csv --print-source sass,
kernels/tools/ncu_source_stalls.sh), grouped by warp role and instruction class.

Roles: a warp-specialized kernel's consumer and producer code lie after their setmaxnreg
(USETMAXREG.TRY_ALLOC / .DEALLOC); out-of-line stubs after the last plain EXIT (the mbarrier
retry loops) belong to the role whose branch jumps there; what comes before both is "setup".
A sample is charged to the instruction the warp waits to issue, so a wait for a product shows up
at WARPGROUP.DEPBAR, a wait for an exponential at the instruction that reads it.
Usage: sass_stalls.py [--top N] [--opcodes N] FILE-sass.csv [...]   (one table per file; --top N:
also each role's N instructions with the most samples, with their address, text and leading stall
reasons; --opcodes N: under each class its N most executed opcodes, with their executed
warp-instructions and samples)
"""
import csv
import re
import signal
import sys
from collections import defaultdict

CLASSES = [
    ("tensor issue", ("HGMMA", "QGMMA", "IGMMA")),
    ("tensor wait", ("WARPGROUP",)),
    ("special (MUFU)", ("MUFU",)),
    ("fp32 math", ("FADD", "FMUL", "FFMA", "FMNMX", "FSEL", "FSETP", "FCHK", "FSWZADD")),
    ("conversion", ("F2FP", "F2F", "I2F", "F2I", "I2FP", "F2IP")),
    ("mbarrier wait", ("SYNCS",)),
    ("named barrier", ("BAR",)),
    ("shuffle", ("SHFL",)),
    ("shared/global memory", ("LDS", "STS", "LDSM", "STSM", "LD", "ST", "LDG", "STG", "RED", "ATOM", "LDC", "ULDC")),
    ("tma", ("UTMALDG", "UTMASTG", "UBLKCP", "UTMAREDG", "UBLKRED", "UTMAPF", "UTMACCTL")),
    ("control", ("BRA", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "WARPSYNC", "NOP", "YIELD", "ELECT", "VOTE", "VOTEU")),
]


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def opcode(src):
    s = re.sub(r"^@!?U?P\w+\s+", "", src.strip())
    return s.split()[0] if s else ""


def klass(op):
    base = op.split(".")[0]
    for name, ops in CLASSES:
        if base in ops:
            return name
    return "integer/other"


def assign_roles(src, addr):
    """The warp role of each instruction (see the module's text)."""
    role = ["setup"] * len(src)
    marks = sorted((i, "consumer" if "TRY_ALLOC" in s else "producer") for i, s in enumerate(src) if "USETMAXREG" in s)
    plain_exits = [i for i, s in enumerate(src) if s == "EXIT"]
    main_end = plain_exits[-1] if plain_exits else len(src) - 1
    for k, (i, r) in enumerate(marks):
        end = marks[k + 1][0] if k + 1 < len(marks) else main_end + 1
        for j in range(i, end):
            role[j] = r
    if not marks:
        for j in range(main_end + 1):
            role[j] = "all"
    index_of = {a: i for i, a in enumerate(addr)}
    stub_role = {}
    for i in range(main_end + 1):
        m = re.search(r"BRA(?:\.\S+)?\s+(?:!?U?P\d,\s*)?(0x[0-9a-f]+)", src[i])
        if m:
            t = index_of.get(int(m.group(1), 16))
            if t is not None and t > main_end and t not in stub_role:
                stub_role[t] = role[i]
    current = "stub"
    for j in range(main_end + 1, len(src)):
        current = stub_role.get(j, current)
        role[j] = current
    return role


def leading_reasons(counts, reasons, total, n=3):
    top = sorted(((counts[r], r) for r in reasons), reverse=True)[:n]
    return ", ".join(f"{r[6:]} {100 * v / total:.0f}%" for v, r in top if v > 0)


def analyze(path, top_n=0, opcodes_n=0):
    rows = list(csv.reader(open(path)))
    kernel = rows[0][1] if rows and rows[0] and rows[0][0] == "Kernel Name" else "?"
    hdr, data = rows[1], rows[2:]
    col = {h: i for i, h in enumerate(hdr)}
    reasons = [h for h in hdr if h.startswith("stall_") and "(Not Issued)" not in h]
    addr = [int(r[col["Address"]], 16) for r in data]
    src = [r[col["Source"]].strip() for r in data]
    samples = [int(r[col["Warp Stall Sampling (All Samples)"]] or 0) for r in data]
    execd = [int(r[col["Instructions Executed"]] or 0) for r in data]
    per = [{x: (int(r[col[x]]) if r[col[x]] not in ("", "-") else 0) for x in reasons} for r in data]
    role = assign_roles(src, addr)
    table = defaultdict(lambda: defaultdict(float))
    ops = defaultdict(lambda: defaultdict(lambda: [0, 0]))  # (role, class) -> opcode -> [executed, samples]
    for j in range(len(data)):
        op = opcode(src[j])
        key = (role[j], klass(op))
        ops[key][op][0] += execd[j]
        ops[key][op][1] += samples[j]
        t = table[key]
        t["samples"] += samples[j]
        t["executed"] += execd[j]
        for reason in reasons:
            t[reason] += per[j][reason]
    total = sum(samples)
    print(f"== {path}\n   {kernel[:150]}\n   {total} samples")
    for who in ("consumer", "producer", "setup", "all", "stub"):
        keys = [k for k in table if k[0] == who and table[k]["samples"] > 0]
        if not keys:
            continue
        role_total = sum(table[k]["samples"] for k in keys)
        print(f"   {who}: {role_total} samples ({100 * role_total / total:.1f} %)")
        for k in sorted(keys, key=lambda k: -table[k]["samples"]):
            t = table[k]
            print(f"     {k[1]:22s} {100 * t['samples'] / role_total:5.1f} %  warp-instr {t['executed']:12.0f}  "
                  f"[{leading_reasons(t, reasons, t['samples'])}]")
            for op, (n, smp) in sorted(ops[k].items(), key=lambda kv: -kv[1][0])[:opcodes_n]:
                share = 100 * n / t["executed"] if t["executed"] else 0.0
                print(f"         {op:32s} warp-instr {n:12.0f} ({share:5.1f} %)  samples {smp}")
        if top_n > 0:
            mine = sorted((j for j in range(len(data)) if role[j] == who and samples[j] > 0), key=lambda j: -samples[j])
            for j in mine[:top_n]:
                print(f"       top {hex(addr[j])} {src[j][:56]:56s} {100 * samples[j] / role_total:5.1f} %  "
                      f"[{leading_reasons(per[j], reasons, samples[j], 2)}]")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when the reader (head) stops early
    args = sys.argv[1:]
    counts = {"--top": 0, "--opcodes": 0}
    while args[:1] and args[0] in counts:
        if len(args) < 2 or not args[1].isdigit():
            fail(__doc__)
        counts[args[0]] = int(args[1])
        args = args[2:]
    if not args:
        fail(__doc__)
    for p in args:
        try:
            analyze(p, counts["--top"], counts["--opcodes"])
        except FileNotFoundError:
            fail(f"sass_stalls.py: no such file: {p}")
        except (IndexError, KeyError, ValueError) as e:
            fail(f"sass_stalls.py: {p} is not ncu's source page as CSV ({e})")
