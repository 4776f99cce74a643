"""The FP8 peer for the GEMM sweep: torch's `_scaled_mm` (cuBLASLt's FP8
matmul underneath) on the shapes of bench/gemm-sweep.txt, E4M3 (or E5M2)
inputs in the layout cuBLASLt's FP8 kernels take (A row-major m x k, B
column-major k x n), per-tensor scales, bf16 output, fast accumulation (as
ours: no promotion between tensor-core instructions). CUDA events, warm-up,
the median of `--iters` runs. Shapes torch refuses (k or n not a multiple
of 16) are listed as refused. Prints a markdown table."""
import argparse

import torch
from torch_timing import median_ms

p = argparse.ArgumentParser()
p.add_argument("--sweep", default="bench/gemm-sweep.txt")
p.add_argument("--dtype", default="e4m3", choices=["e4m3", "e5m2"])
p.add_argument("--iters", type=int, default=20)
p.add_argument("--warmup", type=int, default=5)
o = p.parse_args()
dtype = torch.float8_e4m3fn if o.dtype == "e4m3" else torch.float8_e5m2
shapes = []
for line in open(o.sweep):
    line = line.strip()
    if line and not line.startswith("#"):
        shapes.append(tuple(int(x) for x in line.split()[:3]))
print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
print(f"| precision | shape | torch._scaled_mm ms | TFLOP/s |")
print("| --- | --- | --- | --- |")
for m, n, k in shapes:
    try:
        a = (torch.rand(m, k, device="cuda") * 2 - 1).to(dtype)
        b = (torch.rand(n, k, device="cuda") * 2 - 1).to(dtype).t()
        sa = torch.tensor(0.5, device="cuda")
        sb = torch.tensor(2.0, device="cuda")
        run = lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=True)
        ms = median_ms(run, o.warmup, o.iters)
        print(f"| {o.dtype} | {m}x{n}x{k} | {ms:.4f} | {2 * m * n * k / ms / 1e9:.1f} |")
    except Exception as ex:  # noqa: BLE001 - a refused shape is a result
        print(f"| {o.dtype} | {m}x{n}x{k} | refused: {str(ex).splitlines()[0][:80]} | - |")
