#!/usr/bin/env python3
"""Per-dispatch GPU times of a Vulkan run with KILN_DEBUG=1, as medians per step.

usage: dispatch_medians.py LOG [LABEL]

LOG holds kiln's "kiln: vulkan: step N kernel 'NAME' X us GPU" lines (and the per-run
"... us summed, ... us first start to last end" lines); prints one line per step and one for the
span of a run: median, minimum and count.
"""
import collections
import re
import statistics
import sys

times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.search(r"step (\d+) kernel '([^']+)' ([0-9.]+) us", line)
    if m:
        times[m.group(1) + " " + m.group(2)].append(float(m.group(3)))
    m = re.search(r"([0-9.]+) us summed, ([0-9.]+) us first start", line)
    if m:
        times["span"].append(float(m.group(2)))
label = sys.argv[2] + " " if len(sys.argv) > 2 else ""
for key, v in sorted(times.items()):
    print(f"  {label}{key}: median {statistics.median(v):.2f} us  min {min(v):.2f}  n={len(v)}")
