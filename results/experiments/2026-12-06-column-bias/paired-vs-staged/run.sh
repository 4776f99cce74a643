#!/usr/bin/env bash
# The column bias: per element (new, c80a09c), in the paired register store (col, b6fa309),
# and in the staged store as well (st): dense col-major bf16 with a bias, and without; grouped bf16 with a bias.
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT
for v in new col st; do mkdir -p .device/$v; tar xf .device/gemm-$v.txz -C .device/$v; done
for round in 1; do
for v in new col st; do
  G=.device/$v/gemm; export KERNEL_LAB_GIT_REV=$(cat .device/$v/git-rev)
  for b in "" --bias; do
    $G --shape 4096x4096x4096,2048x11008x4096,4000x4000x4000 --layout col $b --out bf16 --iters 30 --quiet > $OUT/dense-$v$b-$round.md 2>&1 || echo "FAILED dense $v $b"
  done
  $G --groups 8 --shape 4096x4096x7168 --bias --out bf16 --iters 30 --quiet > $OUT/grp-$v-bias-$round.md 2>&1 || echo "FAILED grp $v"
done
done
for f in $OUT/*.md; do echo "== $(basename $f)"; grep "^| " $f | grep -v -- "---" | grep -v "^| precision\|^| call" | cut -d'|' -f4,6,7,8,9,10 ; done
