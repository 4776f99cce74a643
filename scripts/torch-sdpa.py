"""The peers of the attention family: torch's scaled_dot_product_attention
with its FLASH (FlashAttention-2) and CUDNN backends, forced one at a time
(torch.nn.attention.sdpa_kernel), on the shapes of `attention --sweep` (or
those given), bf16 by default, forward only. CUDA events, warm-up, the
median of `--iters` runs; TFLOP/s counted as ours: 4 b h s_q s_k d, halved
when causal. torch's `is_causal` aligns the mask top-left, ours (as
FlashAttention-2's own) bottom-right: the two agree when s_q == s_k, the
only causal shapes timed here with s_q != s_k are reported as top-left.
Grouped-query shapes repeat K/V per head group with `enable_gqa=True`
where torch has it. A backend that refuses a shape is listed as refused.
Prints a markdown table."""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F
from torch_timing import median_ms

# (batch, heads, kv_heads, s_q, s_k, d, causal): the table, then
# odd lengths and grouped-query heads (cpu/src/bin/attention.rs's sweep).
SWEEP = [
    (16, 16, 16, 512, 512, 64, False),
    (8, 16, 16, 2048, 2048, 64, False),
    (8, 16, 16, 2048, 2048, 128, False),
    (4, 16, 16, 4096, 4096, 128, False),
    (4, 16, 16, 4096, 4096, 128, True),
    (2, 16, 16, 8192, 8192, 128, False),
    (1, 16, 16, 16384, 16384, 128, True),
    (4, 8, 8, 4096, 4096, 256, False),
    (4, 16, 16, 4097, 4097, 128, True),
    (8, 16, 16, 77, 77, 128, False),
    (16, 16, 16, 1, 1, 64, False),
    (4, 16, 4, 4096, 4096, 128, True),
    (4, 16, 16, 1000, 4097, 128, True),
    (1, 32, 32, 128, 8192, 128, False),
]

p = argparse.ArgumentParser()
p.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
p.add_argument("--iters", type=int, default=20)
p.add_argument("--warmup", type=int, default=5)
p.add_argument("--shape", action="append", default=[],
               help="b,h,kv_heads,s_q,s_k,d,causal(0/1); repeatable (default: the sweep)")
o = p.parse_args()
dtype = torch.bfloat16 if o.dtype == "bf16" else torch.float16
shapes = [tuple(int(x) for x in s.split(",")) for s in o.shape] or SWEEP
print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, {o.dtype}")
print("| b h/kv s_q x s_k d | causal | backend | ms | TFLOP/s |")
print("| --- | --- | --- | --- | --- |")


for b, h, kv, sq, sk, d, causal in shapes:
    causal = bool(causal)
    flops = 4.0 * b * h * sq * sk * d / (2 if causal else 1)
    q = torch.rand(b, h, sq, d, device="cuda", dtype=dtype) * 4 - 2
    k = torch.rand(b, kv, sk, d, device="cuda", dtype=dtype) * 2 - 1
    v = torch.rand(b, kv, sk, d, device="cuda", dtype=dtype) * 2 - 1
    name = f"{b} {h}/{kv} {sq}x{sk} {d}"
    mask = "yes" + (" (top-left)" if causal and sq != sk else "") if causal else "no"
    for backend, label in [(SDPBackend.FLASH_ATTENTION, "FLASH"), (SDPBackend.CUDNN_ATTENTION, "CUDNN")]:
        try:
            with sdpa_kernel(backend):
                run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=kv != h)
                ms = median_ms(run, o.warmup, o.iters)
            print(f"| {name} | {mask} | {label} | {ms:.4f} | {flops / (ms * 1e-3) / 1e12:.1f} |")
        except Exception as e:  # a backend that refuses the shape
            print(f"| {name} | {mask} | {label} | refused | {str(e).splitlines()[0][:80]} |")
    del q, k, v
    torch.cuda.empty_cache()
