#!/usr/bin/env bash
# The FP8 forward (attention --precision e4m3) on the GPU machine:
# verification at odd shapes (each head dimension, causal bottom-right
# with s_q != s_k both ways, grouped heads, s_k = 1), compute-sanitizer's
# four tools on a small call, then the sweep (bench/attention-sweep.txt)
# in e4m3 and our bf16 Hopper step, beside torch's bf16 FLASH and CUDNN
# in the same call (torch refuses FP8 in SDPA: its bf16 CUDNN is the
# peer). PROFILE=1 adds ncu on the FP8 and bf16 kernels at 4·16·4096·128.
# The sweep tables go to results/attention/ as they are
# (sweep-e4m3-<card>.md, torch-sdpa-bf16-<card>.md). Package the binary
# here first (scripts/device-env.sh says how; carry .device), then on the
# device: OUT=$OUT bash results/experiments/2026-12-05-attention-fp8/run.sh
set -uo pipefail
NAME=fp8
. scripts/device-env.sh
A=$D/bin/attention
echo "=== verify" | tee -a "$LOG"
$A --precision e4m3 --heads 4 --kv-heads 2 --seq 77 --seq-k 300 --head-dim 64 --causal --iters 3 >> "$LOG" 2>&1 || echo "FAILED d64 causal" | tee -a "$LOG"
$A --precision e4m3 --heads 2 --seq 300 --seq-k 77 --head-dim 128 --causal --iters 3 >> "$LOG" 2>&1 || echo "FAILED d128 s_q > s_k" | tee -a "$LOG"
$A --precision e4m3 --heads 3 --kv-heads 1 --seq 4097 --head-dim 128 --iters 3 >> "$LOG" 2>&1 || echo "FAILED d128 4097" | tee -a "$LOG"
$A --precision e4m3 --heads 2 --seq 1000 --seq-k 1 --head-dim 256 --iters 3 >> "$LOG" 2>&1 || echo "FAILED d256 one key" | tee -a "$LOG"
$A --precision e4m3 --batch 2 --heads 8 --seq 3000 --head-dim 256 --causal --iters 3 >> "$LOG" 2>&1 || echo "FAILED d256 causal" | tee -a "$LOG"
echo "=== sanitizers" | tee -a "$LOG"
for t in memcheck racecheck synccheck initcheck; do
  compute-sanitizer --tool $t --error-exitcode 9 $A --precision e4m3 --heads 2 --kv-heads 1 --seq 130 --seq-k 77 --head-dim 128 --causal --iters 1 --warmup 0 > "$TMPD/san-$t.log" 2>&1
  echo "$t exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' $TMPD/san-$t.log)" | tee -a "$LOG"
done
echo "=== sweep" | tee -a "$LOG"
$A --sweep --precision e4m3 --iters ${ITERS:-20} --json "$OUT/sweep-e4m3.json" > "$OUT/sweep-e4m3.md" 2>&1 || echo "FAILED e4m3 sweep" | tee -a "$LOG"
$A --sweep --kernels hopper --iters ${ITERS:-20} > "$OUT/sweep-bf16-hopper.md" 2>&1 || echo "FAILED bf16 sweep" | tee -a "$LOG"
(cd scripts && python3 torch-sdpa.py --iters ${ITERS:-20}) > "$OUT/torch-sdpa-bf16.md" 2>&1
if [ "${PROFILE:-0}" = 1 ]; then
  for p in e4m3 bf16; do
    ncu --clock-control none -k regex:attention_hopper --launch-skip 3 --launch-count 1 --set full -o "$TMPD/ncu-$p" \
      $A --precision $p --kernels hopper --batch 4 --heads 16 --seq 4096 --head-dim 128 --iters 2 --warmup 1 > /dev/null 2>&1
    ncu --import "$TMPD/ncu-$p.ncu-rep" --page details > "$TMPD/ncu-$p.txt" 2>&1
  done
  tar czf "$OUT/ncu.tgz" -C "$TMPD" ncu-e4m3.txt ncu-bf16.txt
fi
grep -h "^FAILED\|exit" "$LOG"
grep -h "e4m3 |" "$LOG" | tail -12
cat "$OUT/sweep-e4m3.md" "$OUT/sweep-bf16-hopper.md" "$OUT/torch-sdpa-bf16.md"
