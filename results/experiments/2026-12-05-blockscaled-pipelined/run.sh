#!/usr/bin/env bash
# Block-scaled FP8 (DeepSeek-V3's recipe) with one stage's products in
# flight while the last one's are scaled, against the kernel before it
# (each stage waited for, `wait_group 0`), in the same call: the old
# binary in .device/gemm.tgz (db245bb), the new in .device/gemm-new.tgz.
# Each row also times cuBLASLt's and our per-tensor FP8 on the same
# operands. Package the new binary as run.sh's of
# 2026-12-05-grouped-and-block-scaled says, named gemm-new.tgz.
#   OUT=$OUT bash results/experiments/2026-12-05-blockscaled-pipelined/run.sh
set -uo pipefail
D=.device
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" $D/old $D/new
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
tar xf "$(ls $D/gemm.t?z)" -C $D/old
tar xf "$(ls $D/gemm-new.t?z)" -C $D/new
LOG=$OUT/blockscaled.log
: > "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a "$LOG"
SHAPES=${SHAPES:-4096x7168x16384,4096x2112x7168,4096x7168x2048,1000x3000x2000,128x7168x16384,8192x8192x8192}
for v in new old; do
  KERNEL_LAB_GIT_REV=$(cat $D/$v/git-rev) $D/$v/gemm --block-scaled --precision e4m3 --shape $SHAPES \
    --out bf16 --iters ${ITERS:-20} --quiet > "$OUT/dense-$v.md" 2>&1 || echo "FAILED dense $v" | tee -a "$LOG"
  KERNEL_LAB_GIT_REV=$(cat $D/$v/git-rev) $D/$v/gemm --block-scaled --precision e4m3 --groups 8 --shape 4096x4096x7168 \
    --out bf16 --iters ${ITERS:-20} --quiet > "$OUT/grouped-$v.md" 2>&1 || echo "FAILED grouped $v" | tee -a "$LOG"
done
# A bias per expert: the grouped bf16 layer with and without it.
for bias in "" --bias; do
  KERNEL_LAB_GIT_REV=$(cat $D/new/git-rev) $D/new/gemm --groups 8 --shape 4096x4096x7168 $bias --out bf16 \
    --iters ${ITERS:-20} --quiet > "$OUT/grouped-bf16$bias.md" 2>&1 || echo "FAILED grouped bf16 $bias" | tee -a "$LOG"
done
# The new kernel's sanitizers, on a call of an odd count of k-blocks.
for t in memcheck racecheck synccheck initcheck; do
  compute-sanitizer --tool $t --error-exitcode 9 $D/new/gemm --block-scaled --precision e4m3 --shape 150x264x640 --out f32 --iters 1 --warmup 0 > "$OUT/san-$t.log" 2>&1
  echo "$t exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' $OUT/san-$t.log)" | tee -a "$LOG"
done
for v in new old; do echo "== $v"; grep -h "^| " "$OUT/dense-$v.md" "$OUT/grouped-$v.md" | grep -v -- "---"; done | tee -a "$LOG"
grep -h "^| bf16" "$OUT"/grouped-bf16*.md | tee -a "$LOG"
