#!/usr/bin/env bash
# Block-scaled FP8 in a ring of six stages (the `Scaled` tile) against the
# ring of four it had (c80a09c), alternating in one call, then the new
# kernel's racecheck. Not run yet: the session's device time ran out.
# Package first, here: the old binary as .device/gemm-new.txz (`gemm` and
# `git-rev` built at c80a09c), the new one as .device/gemm-s6.txz:
#   cp target/release/gemm .device/pkg/ && strip .device/pkg/gemm &&
#   git rev-parse --short=12 HEAD > .device/pkg/git-rev &&
#   (cd .device && tar cJf gemm-s6.txz -C pkg gemm git-rev)
# then, on the GPU machine: OUT=$OUT bash results/experiments/2026-12-06-blockscaled-six-stages/run.sh
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for v in new s6; do mkdir -p .device/$v; tar xf .device/gemm-$v.txz -C .device/$v; done
SHAPES=${SHAPES:-4096x7168x16384,4096x2112x7168,4096x7168x2048,1000x3000x2000,128x7168x16384,8192x8192x8192}
for round in 1 2; do for v in new s6; do
  G=.device/$v/gemm; export KERNEL_LAB_GIT_REV=$(cat .device/$v/git-rev)
  $G --block-scaled --precision e4m3 --shape $SHAPES --out bf16 --iters ${ITERS:-20} --quiet > "$OUT/dense-$v-$round.md" 2>&1 || echo "FAILED dense $v"
  $G --block-scaled --precision e4m3 --groups 8 --shape 4096x4096x7168 --out bf16 --iters ${ITERS:-20} --quiet > "$OUT/grouped-$v-$round.md" 2>&1 || echo "FAILED grouped $v"
  grep -h "^| " "$OUT/dense-$v-$round.md" "$OUT/grouped-$v-$round.md" | grep -v -- "---" | grep -v "^| call\|^| precision" | cut -d'|' -f2,5,6,7,8 | sed "s/^/$v $round /"
done; done
for t in racecheck memcheck; do
  compute-sanitizer --tool $t --error-exitcode 9 .device/s6/gemm --block-scaled --precision e4m3 --shape 150x264x640 --out f32 --iters 1 --warmup 0 > "$OUT/san-$t.log" 2>&1
  echo "$t exit $?"
done
