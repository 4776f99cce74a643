#!/usr/bin/env python3
"""Where a kernel's warps wait, from ncu's per-instruction source counters.

Usage: python3 scripts/sass-stalls.py sass.csv [top]
(`sass.csv`: `ncu -i REP --page source --csv --print-source sass`, as
`remote-gemm.sh ncu-source` writes it.) Prints the warp stall samples by
opcode, then the `top` instructions (default 25) with the most samples,
each with its share, its address and its SASS; first, in address order,
every instruction with at least 0.5% of the samples.
"""
import collections
import csv
import sys


def column(header, *starts):
    for start in starts:
        for i, name in enumerate(header):
            if name.strip().startswith(start):
                return i
    return None


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header_at = next(i for i, r in enumerate(rows) if column(r, "Warp Stall Sampling (All") is not None)
    header = rows[header_at]
    samples_col = column(header, "Warp Stall Sampling (All")
    source_col = column(header, "Source")
    address_col = column(header, "# Address", "Address")
    executed_col = column(header, "Instructions Executed")
    lines = []
    for r in rows[header_at + 1:]:
        if len(r) <= samples_col:
            continue
        try:
            samples = float(r[samples_col] or 0)
        except ValueError:
            continue
        source = r[source_col].strip()
        executed = r[executed_col] if executed_col is not None else ""
        lines.append((samples, r[address_col] if address_col is not None else "", source, executed))
    total = sum(s for s, *_ in lines) or 1.0
    by_op = collections.Counter()
    for s, _, source, _ in lines:
        words = [w for w in source.split() if not w.startswith("@")]
        by_op[words[0] if words else "?"] += s
    print(f"# warp stall samples: {int(total)} over {len(lines)} SASS lines")
    print("# by opcode")
    for op, s in by_op.most_common(15):
        print(f"{100 * s / total:6.1f}% {int(s):8d}  {op}")
    print("# in address order, every instruction with at least 0.5% of the samples")
    for s, address, source, executed in lines:
        if s >= 0.005 * total:
            print(f"{100 * s / total:6.1f}% {int(s):8d}  {address[-5:]:>6} {executed:>10}  {source}")
    print(f"# top {top} instructions (samples, address, executed, SASS)")
    for s, address, source, executed in sorted(lines, key=lambda x: -x[0])[:top]:
        print(f"{100 * s / total:6.1f}% {int(s):8d}  {address:>6} {executed:>10}  {source}")


if __name__ == "__main__":
    main()
