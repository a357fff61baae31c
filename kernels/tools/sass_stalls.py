#!/usr/bin/env python3
"""Warp-state samples of one kernel, per SASS instruction (ncu --page source --csv --print-source sass,
kernels/tools/ncu_source_stalls.sh), grouped by warp role and instruction class.

Roles: a warp-specialized kernel's consumer and producer code lie after their setmaxnreg
(USETMAXREG.TRY_ALLOC / .DEALLOC); out-of-line stubs after the last plain EXIT (the mbarrier
retry loops) belong to the role whose branch jumps there; what comes before both is "setup".
A sample is charged to the instruction the warp waits to issue, so a wait for a product shows up
at WARPGROUP.DEPBAR, a wait for an exponential at the instruction that reads it.
Usage: sass_stalls.py FILE-sass.csv [...]   (one table per file)
"""
import csv
import re
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


def analyze(path):
    rows = list(csv.reader(open(path)))
    kernel = rows[0][1] if rows and rows[0] and rows[0][0] == "Kernel Name" else "?"
    hdr, data = rows[1], rows[2:]
    col = {h: i for i, h in enumerate(hdr)}
    reasons = [h for h in hdr if h.startswith("stall_") and "(Not Issued)" not in h]
    addr = [int(r[col["Address"]], 16) for r in data]
    src = [r[col["Source"]].strip() for r in data]
    samples = [int(r[col["Warp Stall Sampling (All Samples)"]] or 0) for r in data]
    execd = [int(r[col["Instructions Executed"]] or 0) for r in data]
    # roles in address order
    role = ["setup"] * len(data)
    marks = sorted((i, "consumer" if "TRY_ALLOC" in s else "producer") for i, s in enumerate(src) if "USETMAXREG" in s)
    plain_exits = [i for i, s in enumerate(src) if s == "EXIT"]
    main_end = plain_exits[-1] if plain_exits else len(data) - 1
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
    for j in range(main_end + 1, len(data)):
        current = stub_role.get(j, current)
        role[j] = current
    table = defaultdict(lambda: defaultdict(float))
    for j, r in enumerate(data):
        key = (role[j], klass(opcode(src[j])))
        table[key]["samples"] += samples[j]
        table[key]["executed"] += execd[j]
        for reason in reasons:
            v = r[col[reason]]
            table[key][reason] += int(v) if v not in ("", "-") else 0
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
            top = sorted(((t[r], r) for r in reasons), reverse=True)[:3]
            tops = ", ".join(f"{r[6:]} {100 * v / t['samples']:.0f}%" for v, r in top if v > 0)
            print(f"     {k[1]:22s} {100 * t['samples'] / role_total:5.1f} %  warp-instr {t['executed']:12.0f}  [{tops}]")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        fail(__doc__)
    for p in sys.argv[1:]:
        try:
            analyze(p)
        except FileNotFoundError:
            fail(f"sass_stalls.py: no such file: {p}")
        except (IndexError, KeyError, ValueError) as e:
            fail(f"sass_stalls.py: {p} is not ncu's source page as CSV ({e})")
