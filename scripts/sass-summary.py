#!/usr/bin/env python3
"""Counts memory and FMA instructions per kernel in `cuobjdump -sass` output.

Usage: cuobjdump -sass gpu.cubin | python3 scripts/sass-summary.py [kernel-prefix ...]
Shows, per kernel, the shared (LDS/STS), global (LDG/STG), local (LDL/STL:
spills or stack arrays) accesses by width, and FFMA: a quick check that
16-byte accesses are what we meant and nothing went to local memory.
"""
import collections
import re
import sys

prefixes = sys.argv[1:]
counts = collections.OrderedDict()
kernel = None
for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        kernel = m.group(1)
        counts[kernel] = collections.Counter()
        continue
    m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
    if "@!PT" in line:  # never executed (ptxas pads LDGSTS with these)
        continue
    if kernel and m:
        op = m.group(1)
        base = op.split(".")[0]
        if base in ("LDS", "STS", "LDG", "STG", "LDL", "STL", "FFMA", "BAR", "LDGSTS"):
            width = ".128" if ".128" in op else ".64" if ".64" in op else ""
            counts[kernel][base + width] += 1
for kernel, c in counts.items():
    if prefixes and not any(kernel.startswith(p) for p in prefixes):
        continue
    print(f"{kernel:28s} " + " ".join(f"{k}={v}" for k, v in sorted(c.items())))
