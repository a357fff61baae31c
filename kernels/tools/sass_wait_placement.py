#!/usr/bin/env python3
"""Where ptxas put a consumer's waits for its products (issues 32 and 36).

The forward's steady state issues S_j and P_{j-1} V_{j-1}, waits for S_j alone
(wgmma.wait_group 1: WARPGROUP.DEPBAR.LE gsb0, 0x1), runs the softmax of S_j while P V is in
flight, and only then waits for P V (wait_group 0: DEPBAR.LE gsb0, 0x0). The source says so; the
SASS decides. For every kernel of a cuobjdump -sass listing whose mangled name holds NAME, this
prints each window that opens at a DEPBAR.LE gsb0, 0x1 and closes at the next DEPBAR.LE gsb0, 0x0,
with the instructions and the exponentials (MUFU.EX2) inside it ("under P V") and between the
close and the next WARPGROUP.ARRIVE ("after the wait"). A softmax under P V shows its MUFU.EX2
inside the window; one that ptxas moved behind the wait shows them after it.
Usage: sass_wait_placement.py SASS_TXT [NAME]   (cuobjdump -sass BINARY > SASS_TXT)
"""
import re
import sys

INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
FUNC = re.compile(r"Function\s*:\s*(\S+)")


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def functions(lines):
    name, body = None, []
    for line in lines:
        m = FUNC.search(line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
            continue
        m = INSTR.match(line)
        if m and name:
            body.append(m.group(2))
    if name:
        yield name, body


def windows(body):
    """(instructions, MUFU.EX2) inside each wait_group 1 .. wait_group 0 window, and after it."""
    out = []
    i = 0
    while i < len(body):
        if "DEPBAR.LE gsb0, 0x1" in body[i]:
            j = i + 1
            while j < len(body) and "DEPBAR.LE gsb0, 0x0" not in body[j] and "DEPBAR.LE gsb0, 0x1" not in body[j]:
                j += 1
            if j >= len(body) or "DEPBAR.LE gsb0, 0x0" not in body[j]:
                i = j
                continue
            k = j + 1
            while k < len(body) and "WARPGROUP.ARRIVE" not in body[k] and "EXIT" not in body[k]:
                k += 1
            inside, after = body[i + 1 : j], body[j + 1 : k]
            out.append((len(inside), sum("MUFU.EX2" in x for x in inside), len(after), sum("MUFU.EX2" in x for x in after)))
            i = k
        else:
            i += 1
    return out


def main():
    if len(sys.argv) not in (2, 3):
        fail(__doc__.strip().splitlines()[-1])
    try:
        with open(sys.argv[1]) as f:
            lines = f.read().splitlines()
    except OSError as e:
        fail(f"sass_wait_placement.py: {e}")
    name_has = sys.argv[2] if len(sys.argv) == 3 else ""
    found = 0
    for name, body in functions(lines):
        if name_has not in name:
            continue
        found += 1
        ws = windows(body)
        desc = "; ".join(f"under P V {a} instr / {b} EX2, after the wait {c} / {d} EX2" for a, b, c, d in ws) or "no window"
        print(f"{name}: {len(body)} instructions; {desc}")
    if not found:
        fail(f"sass_wait_placement.py: no kernel whose name holds '{name_has}' in {sys.argv[1]}")


if __name__ == "__main__":
    main()
