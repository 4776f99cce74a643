#!/usr/bin/env bash
# A/B of two builds (base/, new/) on one GPU: the library kernels, five
# rounds alternating, base first in odd rounds.
set -u
cd "$(dirname "$0")"
for d in base new; do mkdir -p $d && tar xzf $d.tgz -C $d; done
export CUDA_CACHE_MAXSIZE=4294967296
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
date -u
for b in base new; do $b/gemm --shape 256x256x256 --iters 1 --warmup 0 > /dev/null 2>&1; $b/attention --head-dim 64 --seq 256 --batch 1 --heads 1 --kernels hopper --iters 1 > /dev/null 2>&1; done
one() {
  local b=$1
  $b/gemm --precision bf16 --out bf16 --shape 8192x8192x8192,128x8192x8192,4095x4095x4095 --iters 30 --warmup 5 2>&1 | grep '^| bf16' | sed "s/^/$b gemm-bf16 /"
  $b/gemm --precision e4m3 --out bf16 --op-b t --shape 8192x8192x8192 --iters 30 2>&1 | grep '^| e4m3' | sed "s/^/$b gemm-e4m3 /"
  $b/gemm --precision tf32 --out f32 --op-b t --shape 4096x4096x4096 --iters 30 2>&1 | grep '^| tf32' | sed "s/^/$b gemm-tf32 /"
  for a in "--head-dim 64 --seq 4096 --batch 4" "--head-dim 128 --seq 4096 --batch 4" "--head-dim 128 --seq 4096 --batch 4 --causal" "--head-dim 256 --seq 4096 --batch 4"; do
    $b/attention $a --kernels hopper --iters 30 2>&1 | grep -E '^\| bf16' | sed "s/^/$b attn $a /" | sed 's/--//g'
  done
}
for r in 1 2 3 4 5; do
  echo "### round $r"
  if [ $((r % 2)) = 1 ]; then one base; one new; else one new; one base; fi
done
