#!/usr/bin/env bash
# The grouped GEMM and block-scaled FP8 on the GPU machine: verification
# at odd, uneven and masked calls in bf16, f16 and e4m3, compute-sanitizer's
# four tools on small calls, then a mixture of experts' layer (n 4096, k
# 7168) from 8 experts of 4096 tokens to 256 of 128, against the cuBLAS
# loop in the same process and torch's grouped matmuls in the same call,
# and block-scaled FP8 against the per-tensor FP8 of cuBLASLt and ours.
# Tables last. Package the binary here first (carry .device):
#   cargo build --release && mkdir -p .device/pkg && cp target/release/gemm .device/pkg/ &&
#   strip .device/pkg/gemm && git rev-parse --short=12 HEAD > .device/pkg/git-rev &&
#   (cd .device && tar czf gemm.tgz -C pkg gemm git-rev) && rm -rf .device/pkg
# then on the device: OUT=$OUT bash results/experiments/2026-12-05-grouped-and-block-scaled/run.sh
# PART=verify (verification and sanitizers), PART=moe (the layer's
# grouped calls) or PART=rest (block-scaled, the skewed layer, dense,
# torch's peers) runs one part: the whole took more than one call's 10
# minutes (each of the layer's calls draws and uploads its operands).
# Every part by default.
set -uo pipefail
D=.device
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" "$D/bin"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tar xzf $D/gemm.tgz -C $D/bin
export KERNEL_LAB_GIT_REV=$(cat $D/bin/git-rev)
G=$D/bin/gemm
LOG=$OUT/grouped.log
: > "$LOG"
PART=${PART:-all}
on() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
if on verify; then
echo "=== verify" | tee -a "$LOG"
$G --groups 5 --shape 300x264x200 --skew 1.5 --out bf16 --iters 3 >> "$LOG" 2>&1 || echo "FAILED bf16 skew" | tee -a "$LOG"
$G --groups 7 --shape 200x136x96 --masked --skew 1 --precision f16 --out f16 --iters 3 >> "$LOG" 2>&1 || echo "FAILED f16 masked" | tee -a "$LOG"
$G --groups 3 --shape 500x264x208 --precision e4m3 --scale-a 0.5 --act gelu --out bf16 --iters 3 >> "$LOG" 2>&1 || echo "FAILED e4m3" | tee -a "$LOG"
$G --groups 40 --shape 1000x2048x4096 --skew 2 --out f32 --alpha 0.5 --act relu --iters 3 >> "$LOG" 2>&1 || echo "FAILED bf16 big skew" | tee -a "$LOG"
$G --block-scaled --precision e4m3 --shape 1000x3000x2000,77x264x4096 --alpha 0.5 --act gelu --out bf16 --iters 3 >> "$LOG" 2>&1 || echo "FAILED block-scaled" | tee -a "$LOG"
echo "=== sanitizers" | tee -a "$LOG"
for t in memcheck racecheck synccheck initcheck; do
  compute-sanitizer --tool $t --error-exitcode 9 $G --block-scaled --precision e4m3 --shape 150x264x400 --out f32 --iters 1 --warmup 0 > "$OUT/sanbs-$t.log" 2>&1
  echo "$t block-scaled exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' $OUT/sanbs-$t.log)" | tee -a "$LOG"
  compute-sanitizer --tool $t --error-exitcode 9 $G --groups 5 --shape 150x264x200 --skew 1.5 --out bf16 --iters 1 --warmup 0 > "$OUT/san-$t.log" 2>&1
  echo "$t exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' $OUT/san-$t.log)" | tee -a "$LOG"
  compute-sanitizer --tool $t --error-exitcode 9 $G --groups 3 --shape 150x264x208 --precision e4m3 --masked --skew 1 --out bf16 --iters 1 --warmup 0 > "$OUT/san8-$t.log" 2>&1
  echo "$t e4m3 exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' $OUT/san8-$t.log)" | tee -a "$LOG"
done
fi
if on moe; then
echo "=== moe layer" | tee -a "$LOG"
for p in bf16 e4m3; do
  for gm in ${CALLS:-8x4096 16x2048 32x1024 64x512 128x256 256x128}; do
    g=${gm%x*}; m=${gm#*x}
    $G --groups $g --shape ${m}x4096x7168 --precision $p --out bf16 --iters ${ITERS:-20} > "$OUT/moe-$p-$gm.md" 2>&1 || echo "FAILED $p $gm" | tee -a "$LOG"
  done
done
fi
if on rest; then
for gm in 8x4096 64x512 256x128; do
  g=${gm%x*}; m=${gm#*x}
  $G --groups $g --shape ${m}x4096x7168 --precision e4m3 --block-scaled --out bf16 --iters ${ITERS:-20} > "$OUT/moe-blockscaled-$gm.md" 2>&1 || echo "FAILED block-scaled $gm" | tee -a "$LOG"
done
$G --groups 5 --shape 300x264x400 --precision e4m3 --block-scaled --skew 1.5 --masked --out f32 --iters 3 >> "$LOG" 2>&1 || echo "FAILED grouped block-scaled verify" | tee -a "$LOG"
$G --groups 64 --shape 512x4096x7168 --skew 1 --out bf16 --iters 20 > "$OUT/moe-bf16-skew.md" 2>&1 || echo "FAILED skew" | tee -a "$LOG"
$G --block-scaled --precision e4m3 --shape 4096x7168x16384,8192x7168x16384,4096x4096x7168,128x7168x16384 --out bf16 --iters 20 > "$OUT/blockscaled.md" 2>&1 || echo "FAILED block-scaled timing" | tee -a "$LOG"
$G --shape 32768x4096x7168 --out bf16 --iters 20 > "$OUT/dense-bf16.md" 2>&1 || echo "FAILED dense" | tee -a "$LOG"
$G --shape 32768x4096x7168 --precision e4m3 --op-b t --out bf16 --iters 20 > "$OUT/dense-e4m3.md" 2>&1 || echo "FAILED dense e4m3" | tee -a "$LOG"
(cd scripts && python3 torch-grouped.py --dtype bf16 --calls ${TORCH_CALLS:-8x4096,16x2048,32x1024,64x512,128x256,256x128}) > "$OUT/torch-bf16.md" 2>&1
(cd scripts && python3 torch-grouped.py --dtype e4m3 --calls ${TORCH_CALLS:-8x4096,16x2048,32x1024,64x512,128x256,256x128}) > "$OUT/torch-e4m3.md" 2>&1
fi
grep -h "^| " "$LOG" | grep -v -- "---" | tail -8
for f in "$OUT"/moe-*.md "$OUT"/dense-*.md; do [ -f "$f" ] && grep -h "^| [be]" "$f" | tail -1; done
[ -f "$OUT/blockscaled.md" ] && grep -h "^| [0-9]" "$OUT/blockscaled.md"
for f in "$OUT/torch-bf16.md" "$OUT/torch-e4m3.md"; do [ -f "$f" ] && cat "$f"; done
# Everything in one archive: a device call returns at most 8 files.
tar czf /tmp/grouped-$PART.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/grouped-$PART.tgz "$OUT/"
true
