#!/usr/bin/env bash
# d = 128, the call ab-epilogue.sh left within its spread: nine rounds alternating.
set -u
cd "$(dirname "$0")"
for d in base new; do mkdir -p $d && tar xzf $d.tgz -C $d; done
export CUDA_CACHE_MAXSIZE=4294967296
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
one() {
  local b=$1
  $b/attention --head-dim 128 --seq 4096 --batch 4 --kernels hopper --iters 40 2>&1 | grep -E '^\| bf16' | sed "s/^/$b attn /"
}
for r in 1 2 3 4 5 6 7 8 9; do
  echo "### round $r"
  if [ $((r % 2)) = 1 ]; then one base; one new; else one new; one base; fi
done
