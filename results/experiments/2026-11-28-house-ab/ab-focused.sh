#!/usr/bin/env bash
# A/B of two builds (base/, new/) on one GPU: the calls the first A/B left
# within its spread, five rounds alternating, base first in odd rounds.
set -u
cd "$(dirname "$0")"
for d in base new; do mkdir -p $d && tar xzf $d.tgz -C $d; done
export CUDA_CACHE_MAXSIZE=4294967296
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
# Warm the JIT cache of both builds first.
for b in base new; do $b/gemm --shape 256x256x256 --iters 1 --warmup 0 > /dev/null 2>&1; done
one() {
  local b=$1
  $b/gemm --precision bf16 --out bf16 --shape 8192x8192x8192,128x8192x8192,3072x3072x4096 --iters 50 --warmup 10 2>&1 | grep '^| bf16' | sed "s/^/$b gemm-bf16 /"
  for a in "--head-dim 64 --seq 4096 --batch 4" "--head-dim 128 --seq 4096 --batch 4"; do
    $b/attention $a --kernels hopper --iters 40 2>&1 | grep -E '^\| bf16' | sed "s/^/$b attn $a /" | sed 's/--//g'
  done
}
for r in 1 2 3 4 5; do
  if [ $((r % 2)) = 1 ]; then one base; one new; else one new; one base; fi
done
