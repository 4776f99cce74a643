"""The peers of attention decode: torch's scaled_dot_product_attention on
the lines of bench/attention-decode-sweep.txt, every backend that runs the
shape (FLASH, EFFICIENT, CUDNN) forced one at a time, with `enable_gqa`,
bf16 by default. CUDA events, warm-up, the median of `--iters` runs. TB/s
as ours: the bytes a call must read (K and V of every sequence, Q, O and
lse's 4 bytes a row) over its time. torch's SDPA has no paged cache and
no per-sequence lengths: every line runs contiguous, every sequence its
full length. torch's `is_causal` aligns the mask top-left, ours
bottom-right: causal lines run unmasked here (decode masks at most s_q^2 / 2
of a sequence's keys), marked so. Prints a markdown table, each line's best
backend last."""
import argparse
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch_timing import median_ms, sweep_lines

BACKENDS = [
    (SDPBackend.FLASH_ATTENTION, "FLASH"),
    (SDPBackend.EFFICIENT_ATTENTION, "EFFICIENT"),
    (SDPBackend.CUDNN_ATTENTION, "CUDNN"),
]
SWEEP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "attention-decode-sweep.txt")


def sweep(path):
    """The sweep file's lines: b h kv s_q len d causal|full page [e4m3]
    (torch's SDPA takes no FP8: an e4m3 line's peer is its bf16 line's)."""
    return [
        (int(b), int(h), int(kv), int(sq), int(sk), int(d), mask == "causal")
        for b, h, kv, sq, sk, d, mask, _page, *cache in sweep_lines(path)
        if cache != ["e4m3"]
    ]


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    a.add_argument("--iters", type=int, default=50)
    a.add_argument("--warmup", type=int, default=10)
    o = a.parse_args()
    dtype = torch.bfloat16 if o.dtype == "bf16" else torch.float16
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, {o.dtype}")
    print("| b h/kv s_q x len d | causal | backend | ms | TB/s |")
    print("| --- | --- | --- | --- | --- |")
    for b, h, kv, sq, sk, d, causal in sweep(SWEEP):
        q = torch.rand(b, h, sq, d, device="cuda", dtype=dtype) * 4 - 2
        k = torch.rand(b, kv, sk, d, device="cuda", dtype=dtype) * 2 - 1
        v = torch.rand(b, kv, sk, d, device="cuda", dtype=dtype) * 2 - 1
        bytes_ = 2 * 2 * b * kv * sk * d + 2 * 2 * b * h * sq * d + 4 * b * h * sq
        name = f"{b} {h}/{kv} {sq}x{sk} {d}"
        mask = "yes (run unmasked)" if causal else "no"
        best = None
        for backend, label in BACKENDS:
            try:
                with sdpa_kernel(backend):
                    call = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=kv != h)
                    ms = median_ms(call, o.warmup, o.iters)
                rate = bytes_ / (ms * 1e-3) / 1e12
                print(f"| {name} | {mask} | {label} | {ms:.4f} | {rate:.2f} |")
                if best is None or ms < best[1]:
                    best = (label, ms, rate)
            except Exception as e:  # a backend that refuses the shape
                print(f"| {name} | {mask} | {label} | refused: {str(e).splitlines()[0][:60]} | |")
        if best:
            print(f"| {name} | {mask} | best: {best[0]} | {best[1]:.4f} | {best[2]:.2f} |")


if __name__ == "__main__":
    main()
