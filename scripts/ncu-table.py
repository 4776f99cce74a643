#!/usr/bin/env python3
"""One line per kernel launch of an `ncu --csv --metrics ...` report: the
kernel's name (shortened), then each metric's value, in the order given."""
import csv
import sys
from collections import OrderedDict

rows = OrderedDict()
with open(sys.argv[1], newline="") as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    key = (r["ID"], r["Kernel Name"][:60])
    rows.setdefault(key, OrderedDict())[r["Metric Name"]] = r["Metric Value"]
for (i, name), metrics in rows.items():
    print(f"{i:>3} {name:<60} " + " ".join(f"{k.split('.')[0].split('__')[-1]}={v}" for k, v in metrics.items()))
