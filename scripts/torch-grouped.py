"""The grouped GEMM's torch peer: `torch._grouped_mm` (bf16) and
`torch._scaled_grouped_mm` (FP8 E4M3, row-wise scales) on a mixture of
experts' layer: G experts of M tokens each (contiguous, `offs` the groups'
ends), weights n x k, the same calls `gemm --groups G --shape MxNxK` times.
The weights are tried in both layouts torch takes (k x n row-major, and
the transpose of an n x k row-major weight); each row reports the faster.
CUDA events, warm-up, the median of `--iters` runs. Prints a markdown
table; a call torch refuses is listed as refused."""
import argparse

import torch
from torch_timing import median_ms

p = argparse.ArgumentParser()
p.add_argument("--calls", default="8x4096,16x2048,32x1024,64x512,128x256,256x128",
               help="GxM: G experts of M tokens each")
p.add_argument("--n", type=int, default=4096)
p.add_argument("--k", type=int, default=7168)
p.add_argument("--dtype", default="bf16", choices=["bf16", "e4m3"])
p.add_argument("--iters", type=int, default=20)
p.add_argument("--warmup", type=int, default=5)
o = p.parse_args()
print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
peer = "torch._grouped_mm" if o.dtype == "bf16" else "torch._scaled_grouped_mm"
print(f"| precision | call | {peer} ms | TFLOP/s | weight layout |")
print("| --- | --- | --- | --- | --- |")
n, k = o.n, o.k
for spec in o.calls.split(","):
    g, m = (int(x) for x in spec.split("x"))
    call = f"{g} groups, m {g * m} n {n} k {k}"
    flops = 2 * g * m * n * k
    offs = torch.arange(1, g + 1, device="cuda", dtype=torch.int32) * m
    best = None
    for layout in ["n x k", "k x n"]:
        try:
            if o.dtype == "bf16":
                a = (torch.rand(g * m, k, device="cuda") * 2 - 1).to(torch.bfloat16)
                w = (torch.rand(g, n, k, device="cuda") * 2 - 1).to(torch.bfloat16)
                b = w.transpose(1, 2) if layout == "n x k" else w.transpose(1, 2).contiguous()
                run = lambda: torch._grouped_mm(a, b, offs=offs, out_dtype=torch.bfloat16)
            else:
                a = (torch.rand(g * m, k, device="cuda") * 2 - 1).to(torch.float8_e4m3fn)
                w = (torch.rand(g, n, k, device="cuda") * 2 - 1).to(torch.float8_e4m3fn)
                b = w.transpose(1, 2) if layout == "n x k" else w.transpose(1, 2).contiguous()
                sa = torch.full((g * m,), 0.5, device="cuda", dtype=torch.float32)
                sb = torch.full((g, n), 2.0, device="cuda", dtype=torch.float32)
                run = lambda: torch._scaled_grouped_mm(a, b, sa, sb, offs=offs, out_dtype=torch.bfloat16)
            ms = median_ms(run, o.warmup, o.iters)
            if best is None or ms < best[0]:
                best = (ms, layout)
            del a, w, b
        except Exception as ex:  # noqa: BLE001 - a refused call is a result
            print(f"| {o.dtype} | {call} | refused ({layout}): {str(ex).splitlines()[0][:80]} | - | - |")
        torch.cuda.empty_cache()
    if best:
        print(f"| {o.dtype} | {call} | {best[0]:.4f} | {flops / best[0] / 1e9:.1f} | {best[1]} |")
