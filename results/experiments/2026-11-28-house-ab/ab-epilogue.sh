#!/usr/bin/env bash
# A/B of the attention epilogue as a type (new/) against the build before
# it (base/: the precision axis), five rounds alternating.
set -u
cd "$(dirname "$0")"
for d in base new; do mkdir -p $d && tar xzf $d.tgz -C $d; done
export CUDA_CACHE_MAXSIZE=4294967296
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
date -u
for b in base new; do $b/attention --head-dim 64 --seq 256 --batch 1 --heads 1 --kernels hopper --iters 1 > /dev/null 2>&1; done
one() {
  local b=$1
  for a in "--head-dim 64 --seq 4096 --batch 4" "--head-dim 128 --seq 4096 --batch 4" "--head-dim 128 --seq 4096 --batch 4 --causal" "--head-dim 128 --seq 1000 --batch 3 --heads 7"; do
    $b/attention $a --kernels hopper --iters 30 2>&1 | grep -E '^\| bf16' | sed "s/^/$b attn $a /" | sed 's/--//g'
  done
  $b/gemm --precision bf16 --out bf16 --shape 8192x8192x8192 --iters 20 2>&1 | grep '^| bf16' | sed "s/^/$b gemm-bf16 /"
}
for r in 1 2 3 4 5; do
  echo "### round $r"
  if [ $((r % 2)) = 1 ]; then one base; one new; else one new; one base; fi
done
