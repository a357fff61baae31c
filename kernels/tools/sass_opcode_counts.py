#!/usr/bin/env python3
"""Static opcode counts of the kernels in a cuobjdump -sass listing whose (mangled) name holds
NAME: how many HGMMA, R2UR, LOP3, ... a kernel's code has (kernels/RESULTS.md, the backward's
descriptor arithmetic). Opcodes are counted without their modifiers (LOP3.LUT counts as LOP3).
Usage: sass_opcode_counts.py SASS_TXT NAME [OPCODE ...]   (cuobjdump -sass BINARY > SASS_TXT;
  default opcodes: HGMMA R2UR LOP3 SHF VIADD IMAD ULOP3 UIADD3 USHF UMOV MUFU FFMA)
"""
import collections
import re
import sys

DEFAULT = ["HGMMA", "R2UR", "LOP3", "SHF", "VIADD", "IMAD", "ULOP3", "UIADD3", "USHF", "UMOV", "MUFU", "FFMA"]


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    path, name, wanted = sys.argv[1], sys.argv[2], sys.argv[3:] or DEFAULT
    found = 0
    for part in re.split(r"\n\s*Function : ", open(path).read())[1:]:
        fn = part.split("\n", 1)[0].strip()
        if name not in fn:
            continue
        found += 1
        ops = collections.Counter(m.group(1).split(".")[0] for m in
                                  re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", part))
        print(f"{fn[:100]}: {sum(ops.values())} instructions, " + " ".join(f"{k}={ops[k]}" for k in wanted))
    if not found:
        fail(f"sass_opcode_counts.py: no kernel whose name holds '{name}' in {path}")


if __name__ == "__main__":
    try:
        main()
    except FileNotFoundError as e:
        fail(f"sass_opcode_counts.py: no such file: {e.filename}")
