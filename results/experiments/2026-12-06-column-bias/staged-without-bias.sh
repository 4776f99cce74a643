#!/usr/bin/env bash
# No bias: does the staged store's column-bias code cost the plain call anything? new vs st, alternating, 3 rounds.
export PATH=/usr/local/cuda/bin:$PATH
for v in new st; do mkdir -p .device/$v; tar xf .device/gemm-$v.txz -C .device/$v; done
for round in 1 2 3; do for v in new st; do
  KERNEL_LAB_GIT_REV=$(cat .device/$v/git-rev) .device/$v/gemm --shape 4096x4096x4096,4000x4000x4000,8192x8192x8192 --layout col --out bf16 --iters 50 --quiet 2>&1 | grep "^| bf16" | cut -d'|' -f4,6,7,9,10 | sed "s/^/$v $round /"
done; done
