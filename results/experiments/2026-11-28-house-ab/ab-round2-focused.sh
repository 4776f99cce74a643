#!/usr/bin/env bash
# The calls ab-round2.sh left near its spread: seven rounds alternating.
set -u
cd "$(dirname "$0")"
for d in base new; do mkdir -p $d && tar xzf $d.tgz -C $d; done
export CUDA_CACHE_MAXSIZE=4294967296
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
date -u
one() {
  local b=$1
  $b/gemm --precision tf32 --out f32 --op-b t --shape 4096x4096x4096,2048x8192x4096 --iters 40 2>&1 | grep '^| tf32' | sed "s/^/$b gemm-tf32 /"
  $b/gemm --precision bf16 --out bf16 --shape 128x8192x8192 --iters 50 2>&1 | grep '^| bf16' | sed "s/^/$b gemm-bf16 /"
}
for r in 1 2 3 4 5 6 7; do
  echo "### round $r"
  if [ $((r % 2)) = 1 ]; then one base; one new; else one new; one base; fi
done
