"""What the torch peer scripts share: the median time of a CUDA call, and
the lines of a sweep file."""

import statistics

import torch


def median_ms(run, warmup, iters):
    """`run()` timed with CUDA events after `warmup` calls: the median of
    `iters` runs, in milliseconds."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def sweep_lines(path):
    """The words of each line of the sweep file `path` (`#` starts a comment
    line; blank lines are skipped)."""
    lines = []
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            lines.append(line.split())
    return lines
