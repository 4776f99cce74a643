#!/usr/bin/env bash
# Decode on the GPU machine: verification at odd lengths (paged and
# contiguous, causal with several queries, grouped heads, f16, d = 64 and
# 256, a split and none, an FP8 cache), compute-sanitizer's four tools on a paged split
# call, then the decode sweep (bench/attention-decode-sweep.txt, each line
# contiguous and paged, beside the device's copy) and torch's SDPA
# backends on the same lines. Tables last; the two sweep tables go to
# results/attention/ as they are (decode-sweep-bf16-<card>.md,
# torch-sdpa-decode-bf16-<card>.md). Package the binary here first
# (carry .device; see the backward's run.sh), then on the device:
#   OUT=$OUT bash results/experiments/2026-12-05-decode/run.sh
set -uo pipefail
D=.device
OUT=${OUT:-/tmp/out}
TMPD=/tmp/decode
mkdir -p "$OUT" "$D/bin" "$TMPD"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
[ -x $D/bin/attention ] || tar xzf $D/attention.tgz -C $D/bin
export KERNEL_LAB_GIT_REV=$(cat $D/bin/git-rev)
A=$D/bin/attention
LOG=$OUT/decode.log
: > "$LOG"
echo "=== decode verify" | tee -a "$LOG"
$A --decode --batch 3 --heads 32 --kv-heads 8 --kv-lens 4097,77,20000 --seq 3 --causal --page-size 16 --iters 3 --explain >> "$LOG" 2>&1 || echo "FAILED decode paged causal"
$A --decode --batch 3 --heads 32 --kv-heads 8 --kv-lens 4097,77,20000 --seq 3 --causal --page-size 16 --kv-cache e4m3 --iters 3 >> "$LOG" 2>&1 || echo "FAILED decode e4m3" | tee -a "$LOG"
$A --decode --batch 2 --heads 16 --kv-heads 2 --kv-len 30001 --seq 16 --head-dim 256 --page-size 64 --precision f16 --iters 3 --explain >> "$LOG" 2>&1 || echo "FAILED decode d256" | tee -a "$LOG"
$A --decode --batch 200 --heads 8 --kv-heads 8 --kv-len 1000 --head-dim 64 --page-size 256 --iters 3 --explain >> "$LOG" 2>&1 || echo "FAILED decode d64" | tee -a "$LOG"
$A --varlen 100,4097,77,1000 --heads 32 --kv-heads 8 --causal --page-size 64 --iters 3 --explain >> "$LOG" 2>&1 || echo "FAILED varlen" | tee -a "$LOG"
echo "=== decode sanitizers" | tee -a "$LOG"
for t in memcheck racecheck synccheck initcheck; do
  for c in bf16 e4m3; do
    compute-sanitizer --tool $t --error-exitcode 9 $A --decode --batch 2 --heads 8 --kv-heads 2 --kv-lens 3000,77 --seq 2 --causal --page-size 32 --kv-cache $c --iters 1 --warmup 0 > "$TMPD/san-$t-$c.log" 2>&1
    echo "$t decode $c exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' $TMPD/san-$t-$c.log)" | tee -a "$LOG"
  done
done
echo "=== decode sweep" | tee -a "$LOG"
$A --decode --sweep --iters ${ITERS:-50} --warmup 10 --explain --json "$OUT/decode-sweep.json" > "$OUT/decode-sweep-bf16.md" 2>&1 || echo "FAILED decode sweep" | tee -a "$LOG"
(cd scripts && python3 torch-sdpa-decode.py --iters ${ITERS:-50}) > "$OUT/torch-sdpa-decode-bf16.md" 2>&1
# Packed sequences beside the same ones one by one (the same kernels), and
# the Hopper prefill step on the longest alone.
$A --varlen 100,4096,77,1000,2048,513 --heads 32 --kv-heads 8 --causal --iters ${ITERS:-50} >> "$LOG" 2>&1 || echo "FAILED varlen timing" | tee -a "$LOG"
$A --kernels hopper --heads 32 --kv-heads 8 --seq 4096 --causal --iters ${ITERS:-50} >> "$LOG" 2>&1 || echo "FAILED hopper 4096" | tee -a "$LOG"
grep -h "^FAILED\|exit\|^| bf16\|^| f16" "$LOG" | tail -36
grep -h "^| bf16" "$OUT/decode-sweep-bf16.md"
grep -h "best\|refused" "$OUT/torch-sdpa-decode-bf16.md"
