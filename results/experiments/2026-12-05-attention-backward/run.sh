#!/usr/bin/env bash
# Attention's backward on the GPU machine: verification of both steps at
# odd lengths (causal bottom-right with s_q != s_k both ways, grouped
# heads, f16, both fused steps' deterministic mode, causal both ways,
# d = 256 on the unfused step),
# compute-sanitizer's four tools on small calls of each step, our
# gradients against an f64 reference beside torch's FLASH and CUDNN
# gradients of the same inputs (--dump, then the torch script's
# --compare), then the backward sweep (bench/attention-backward-sweep.txt)
# with the forward and backward timed apart, each problem in both modes
# (the deterministic mode's cost),
# and torch's backward peers in the same call. Tables last; the two
# sweep tables go to results/attention/ as they are (backward-sweep-bf16-<card>.md,
# torch-sdpa-backward-bf16-<card>.md), where `report --attention` reads them. Package the
# binary here first (scripts/device-env.sh says how; carry .device), then
# on the device: OUT=$OUT bash results/experiments/2026-12-05-attention-backward/run.sh
# (What comes back from the device is at most 8 files: the sanitizers'
# logs and the dump stay in $TMPD, the small runs go to the log.)
set -uo pipefail
NAME=backward
. scripts/device-env.sh
A=$D/bin/attention
# PART=verify runs the verification, the sanitizers and the comparison;
# PART=sweep the timings; both by default.
PART=${PART:-all}
if [ "$PART" != sweep ]; then
echo "=== verify" | tee -a "$LOG"
$A --backward --heads 4 --kv-heads 2 --seq 77 --seq-k 300 --head-dim 64 --causal --iters 3 >> "$LOG" 2>&1 || echo "FAILED d64 causal" | tee -a "$LOG"
$A --backward --heads 2 --seq 300 --seq-k 77 --head-dim 128 --causal --precision f16 --iters 3 >> "$LOG" 2>&1 || echo "FAILED d128 f16" | tee -a "$LOG"
$A --backward --heads 3 --kv-heads 1 --seq 4097 --head-dim 128 --deterministic --iters 3 >> "$LOG" 2>&1 || echo "FAILED deterministic" | tee -a "$LOG"
$A --backward --kernels flash,hopper --heads 4 --kv-heads 2 --seq 1000 --seq-k 3000 --head-dim 64 --causal --deterministic --iters 3 >> "$LOG" 2>&1 || echo "FAILED deterministic causal" | tee -a "$LOG"
$A --backward --kernels flash,hopper --heads 2 --seq 3000 --seq-k 1000 --head-dim 128 --causal --deterministic --iters 3 >> "$LOG" 2>&1 || echo "FAILED deterministic causal s_q > s_k" | tee -a "$LOG"
$A --backward --kernels unfused --heads 2 --seq 1000 --head-dim 256 --iters 3 >> "$LOG" 2>&1 || echo "FAILED d256 unfused" | tee -a "$LOG"
echo "=== sanitizers" | tee -a "$LOG"
for t in memcheck racecheck synccheck initcheck; do
  for k in unfused flash hopper; do
    compute-sanitizer --tool $t --error-exitcode 9 $A --backward --kernels $k --heads 2 --kv-heads 1 --seq 130 --seq-k 77 --head-dim 128 --causal --iters 1 --warmup 0 > "$TMPD/san-$k-$t.log" 2>&1
    echo "$t $k exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' $TMPD/san-$k-$t.log)" | tee -a "$LOG"
  done
  for k in flash hopper; do
    compute-sanitizer --tool $t --error-exitcode 9 $A --backward --kernels $k --deterministic --heads 2 --seq 200 --seq-k 300 --head-dim 64 --causal --iters 1 --warmup 0 > "$TMPD/san-det-$k-$t.log" 2>&1
    echo "$t $k deterministic exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' $TMPD/san-det-$k-$t.log)" | tee -a "$LOG"
  done
done
echo "=== gradients against torch's" | tee -a "$LOG"
mkdir -p "$TMPD/dump"
$A --backward --kernels flash,hopper --batch 2 --heads 8 --kv-heads 2 --seq 1024 --head-dim 128 --causal --iters 1 --dump "$TMPD/dump" >> "$LOG" 2>&1 || echo "FAILED dump" | tee -a "$LOG"
(cd scripts && python3 torch-sdpa-backward.py --compare "$TMPD/dump") > "$OUT/compare.md" 2>&1
cat "$OUT/compare.md"
fi
[ "$PART" = verify ] && { grep -h "^FAILED\|exit\|wrote\|backward |" "$LOG" | tail -40; exit 0; }
echo "=== sweep" | tee -a "$LOG"
# (Every step, the unfused one too: its S, dP, P and dS take 12 bytes a
# score, 51 GB at 1x16x16384^2, which an 80 GB card holds; the report
# sets its traffic beside its time. Each problem in both modes: the
# report sets the deterministic mode's cost beside the default.)
$A --backward --sweep --deterministic --kernels unfused,flash,hopper --iters ${ITERS:-20} --json "$OUT/backward-sweep.json" > "$OUT/backward-sweep-bf16.md" 2>&1 || echo "FAILED sweep" | tee -a "$LOG"
(cd scripts && python3 torch-sdpa-backward.py --iters ${ITERS:-20}) > "$OUT/torch-sdpa-backward-bf16.md" 2>&1
grep -h "^FAILED\|exit" "$LOG" | tail -16
grep -h "backward |" "$OUT/backward-sweep-bf16.md"
grep -h "backward |" "$LOG" | tail -4
cat "$OUT/compare.md" "$OUT/torch-sdpa-backward-bf16.md"
