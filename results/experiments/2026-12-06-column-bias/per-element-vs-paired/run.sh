#!/usr/bin/env bash
# The column bias in the paired store (col) against the per-element store (new, c80a09c):
# grouped bf16 with/without bias, dense col-major bf16 with a bias (a bias along the kernel's columns) and without.
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT .device/new .device/col
tar xf .device/gemm-new.txz -C .device/new; tar xf .device/gemm-col.txz -C .device/col
for round in 1 2; do
for v in new col; do
  G=.device/$v/gemm; export KERNEL_LAB_GIT_REV=$(cat .device/$v/git-rev)
  for b in "" --bias; do
    $G --groups 8 --shape 4096x4096x7168 $b --out bf16 --iters 30 --quiet > $OUT/grp-$v$b-$round.md 2>&1 || echo "FAILED grp $v $b"
    $G --shape 4096x4096x4096,8192x8192x8192,2048x11008x4096 --layout col $b --out bf16 --iters 30 --quiet > $OUT/dense-$v$b-$round.md 2>&1 || echo "FAILED dense $v $b"
  done
done
done
for f in $OUT/*.md; do echo "== $(basename $f)"; grep "^| " $f | grep -v -- "---" | grep -v "^| precision\|^| call" ; done
