#!/usr/bin/env bash
# FP8 attention with descales per K/V head (--head-descales) against per
# tensor, in one call: the cost of a tile's two loads, and the accuracy
# tables (RMSE on uniform inputs and FlashAttention-3's outlier case).
# The split of the last round is off in both (--no-split), since calls
# with descales per head never split: the difference is the loads alone.
# Not run yet (no device time was left on 2026-12-06). Package first:
#   mkdir -p .device/pkg && cp target/release/attention .device/pkg/ && strip .device/pkg/attention &&
#   git rev-parse --short=12 HEAD > .device/pkg/git-rev && (cd .device && tar cJf attention.txz -C pkg attention git-rev)
# then, on the GPU machine: OUT=$OUT bash results/experiments/2026-12-06-fp8-head-descales/run.sh
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" .device/bin
tar xf .device/attention.txz -C .device/bin
A=.device/bin/attention
export KERNEL_LAB_GIT_REV=$(cat .device/bin/git-rev)
for round in 1 2; do
  for mode in "" --head-descales; do
    for d in 128 256; do
      $A --precision e4m3 $mode --no-split --batch 4 --heads 16 --kv-heads 16 --seq 4096 --head-dim $d \
        > "$OUT/e4m3-d$d$mode-$round.md" 2>&1 || echo "FAILED d$d $mode"
      grep -h "^| e4m3" "$OUT/e4m3-d$d$mode-$round.md" | sed "s/^/$round $mode /"
    done
  done
done
compute-sanitizer --tool memcheck --error-exitcode 9 $A --precision e4m3 --head-descales --batch 2 --heads 4 --kv-heads 2 --seq 300 --head-dim 128 --iters 1 > "$OUT/san-mem.log" 2>&1
echo "memcheck exit $?"
