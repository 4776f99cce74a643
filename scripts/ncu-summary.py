#!/usr/bin/env python3
"""Summarises `ncu --csv --metrics ...` output per kernel launch.

Usage: python3 scripts/ncu-summary.py ncu.csv [--all]
Prints, for each kernel (first launch of each name): shared-memory load
wavefronts per load instruction (1 = conflict-free, 32 = 32-way), and
global sectors per request for loads and stores (4 = a warp reading 128
contiguous bytes, 32 = every lane in its own sector).
"""
import csv
import sys

rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
header, rows = rows[0], rows[1:]
col = {name: header.index(name) for name in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
launches = {}
for r in rows:
    key = (int(r[col["ID"]]), r[col["Kernel Name"]].split("(")[0])
    launches.setdefault(key, {})[r[col["Metric Name"]]] = float(r[col["Metric Value"]].replace(",", "") or 0)

def ratio(m, a, b):
    return f"{m[a] / m[b]:.2f}" if m.get(b) else "-"

every = "--all" in sys.argv
seen = set()
count = {}
print(f"{'kernel':24s} {'smem ld wavefronts/instr':>24s} {'bank conflicts (ld)':>20s} {'gld sectors/req':>16s} {'gst sectors/req':>16s}")
for (_, name), m in sorted(launches.items()):
    if name in seen and not every:
        continue
    seen.add(name)
    count[name] = count.get(name, 0) + 1
    label = f"{name}#{count[name]}" if every else name
    print(f"{label:24s} "
          f"{ratio(m, 'l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum', 'smsp__inst_executed_op_shared_ld.sum'):>24s} "
          f"{int(m.get('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum', 0)):>20d} "
          f"{ratio(m, 'l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum', 'l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum'):>16s} "
          f"{ratio(m, 'l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum', 'l1tex__t_requests_pipe_lsu_mem_global_op_st.sum'):>16s}")
