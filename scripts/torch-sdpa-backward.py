"""The peers of the attention backward: torch's scaled_dot_product_attention
with its FLASH (FlashAttention-2) and CUDNN backends forced one at a time,
forward and backward timed apart, on the lines of
bench/attention-backward-sweep.txt (or those given), bf16 by default.
CUDA events, warm-up, the median of `--iters` runs. TFLOP/s as ours:
forward 4 b h s_q s_k d, backward 10 b h s_q s_k d (2.5 times), halved
when causal. torch's `is_causal` aligns the mask top-left, ours
bottom-right: they agree when s_q == s_k; causal shapes with s_q != s_k
are marked (top-left). A backend that refuses a shape is listed as
refused. Prints a markdown table.

`--compare DIR` instead holds the gradients that `attention --backward
--dump DIR` wrote against an f64 reference computed here from the same
inputs (and, beside them, torch's own backends' gradients of the same
inputs): for each of dQ, dK, dV, the largest error over the largest
reference magnitude, ours and each backend's."""
import argparse
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch_timing import median_ms, sweep_lines

BACKENDS = [(SDPBackend.FLASH_ATTENTION, "FLASH"), (SDPBackend.CUDNN_ATTENTION, "CUDNN")]
SWEEP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "attention-backward-sweep.txt")


def sweep(path):
    """The sweep file's lines: b h kv s_q s_k d causal|full."""
    return [
        (int(b), int(h), int(kv), int(sq), int(sk), int(d), mask == "causal")
        for b, h, kv, sq, sk, d, mask in sweep_lines(path)
    ]


def reference(q, k, v, d_o, causal, scale):
    """dQ, dK, dV in f64 (autograd through the plain formula), causal
    bottom-right; K/V repeated per query head group, their gradients
    summed back."""
    q, k, v, d_o = (x.double().detach().requires_grad_(x is not d_o) for x in (q, k, v, d_o))
    h, kv = q.shape[1], k.shape[1]
    kr, vr = k.repeat_interleave(h // kv, 1), v.repeat_interleave(h // kv, 1)
    s = torch.matmul(q, kr.transpose(-1, -2)) * scale
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        i = torch.arange(sq, device=s.device)[:, None]
        j = torch.arange(sk, device=s.device)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    o = torch.matmul(p, vr)
    return torch.autograd.grad(o, (q, k, v), d_o)


def compare(o):
    """`--compare DIR`: ours and torch's backends against the f64 reference."""
    words = open(os.path.join(o.compare, "problem.txt")).read().split()
    b, h, kv, sq, sk, d, causal = (int(x) for x in words[:7])
    scale, precision, step = float(words[7]), words[8], words[9]
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16

    def load(name, heads, s):
        raw = open(os.path.join(o.compare, name + ".bin"), "rb").read()
        x = torch.frombuffer(bytearray(raw), dtype=torch.int16).view(dtype)
        return x.reshape(b, heads, s, d).cuda()

    q, k, v, d_o = load("q", h, sq), load("k", kv, sk), load("v", kv, sk), load("do", h, sq)
    ours = (load("dq", h, sq), load("dk", kv, sk), load("dv", kv, sk))
    want = reference(q, k, v, d_o, bool(causal), scale)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, {precision}")
    print(f"gradients of b{b} h{h}/{kv} s{sq}x{sk} d{d}{' causal' if causal else ''}: "
          "the largest error over the largest |reference| (f64 reference)")
    print("| who | dQ | dK | dV |")
    print("| --- | --- | --- | --- |")

    def row(who, got):
        errs = [((g.double() - w).abs().max() / w.abs().max()).item() for g, w in zip(got, want)]
        print(f"| {who} | " + " | ".join(f"{e:.2e}" for e in errs) + " |")

    row(f"ours ({step})", ours)
    if causal and sq != sk:
        print("(torch's causal mask is top-left: its backends are not compared on this shape)")
        return
    for backend, label in BACKENDS:
        try:
            with sdpa_kernel(backend):
                x = [t.detach().requires_grad_() for t in (q, k, v)]
                out = F.scaled_dot_product_attention(*x, is_causal=bool(causal), scale=scale, enable_gqa=kv != h)
                row(label, torch.autograd.grad(out, x, d_o))
        except Exception as e:  # a backend that refuses the shape
            print(f"| {label} | refused: {str(e).splitlines()[0][:60]} | | |")


def timings(o):
    dtype = torch.bfloat16 if o.dtype == "bf16" else torch.float16
    shapes = [tuple(int(x) for x in s.split(",")) for s in o.shape] or sweep(SWEEP)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, {o.dtype}")
    print("| b h/kv s_q x s_k d | causal | backend | forward ms | forward TFLOP/s | backward ms | backward TFLOP/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for b, h, kv, sq, sk, d, causal in shapes:
        causal = bool(causal)
        flops = 4.0 * b * h * sq * sk * d / (2 if causal else 1)
        q = (torch.rand(b, h, sq, d, device="cuda", dtype=dtype) * 4 - 2).requires_grad_()
        k = (torch.rand(b, kv, sk, d, device="cuda", dtype=dtype) * 2 - 1).requires_grad_()
        v = (torch.rand(b, kv, sk, d, device="cuda", dtype=dtype) * 2 - 1).requires_grad_()
        d_o = torch.rand(b, h, sq, d, device="cuda", dtype=dtype) * 2 - 1
        name = f"{b} {h}/{kv} {sq}x{sk} {d}"
        mask = "yes" + (" (top-left)" if causal and sq != sk else "") if causal else "no"
        for backend, label in BACKENDS:
            try:
                with sdpa_kernel(backend):
                    fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=kv != h)
                    fwd_ms = median_ms(fwd, o.warmup, o.iters)
                    out = fwd()
                    bwd = lambda: torch.autograd.grad(out, (q, k, v), d_o, retain_graph=True)
                    bwd_ms = median_ms(bwd, o.warmup, o.iters)
                    del out
                print(f"| {name} | {mask} | {label} | {fwd_ms:.4f} | {flops / (fwd_ms * 1e-3) / 1e12:.1f} "
                      f"| {bwd_ms:.4f} | {2.5 * flops / (bwd_ms * 1e-3) / 1e12:.1f} |")
            except Exception as e:  # a backend that refuses the shape
                print(f"| {name} | {mask} | {label} | refused | {str(e).splitlines()[0][:80]} | | |")
        del q, k, v, d_o
        torch.cuda.empty_cache()


p = argparse.ArgumentParser()
p.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
p.add_argument("--iters", type=int, default=20)
p.add_argument("--warmup", type=int, default=5)
p.add_argument("--shape", action="append", default=[],
               help="b,h,kv_heads,s_q,s_k,d,causal(0/1); repeatable (default: the sweep file)")
p.add_argument("--compare", help="a folder `attention --backward --dump` wrote")
o = p.parse_args()
compare(o) if o.compare else timings(o)
