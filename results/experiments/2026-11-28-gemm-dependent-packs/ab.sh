#!/usr/bin/env bash
# A/B: base (.device/base) against new (.device/new) gemm, alternating,
# on seed 1's random shapes (bf16 and f16), then compute-sanitizer on the
# new binary's packed calls.
set -u
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p .device/base .device/new
tar xzf .device/base.tgz -C .device/base && tar xzf .device/new.tgz -C .device/new
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for round in 1 2; do
  for v in base new; do
    for p in bf16 f16; do
      .device/$v/gemm --precision $p --out $p --random 40 --seed 1 --iters 20 > $OUT/$v-$p-$round.md 2>/dev/null
      echo "$v $p round $round: $(tail -1 $OUT/$v-$p-$round.md)"
    done
  done
done
for tool in memcheck racecheck synccheck initcheck; do
  compute-sanitizer --tool $tool --error-exitcode 9 .device/new/gemm --precision bf16 --out bf16 \
    --shape 4x28x1,67x130x257,300x201x99 --layout col --op-a t --iters 1 --warmup 0 > $OUT/sanitize-$tool.log 2>&1
  echo "compute-sanitizer $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitize-$tool.log | tr '\n' ' ')"
done
