#!/usr/bin/env bash
# The Hopper backward with dQ by TMA reductions: verify, sanitize, time, profile.
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT .device/bin /tmp/san
tar xzf .device/attention.tgz -C .device/bin
A=.device/bin/attention
LOG=$OUT/bwd2.log
{
echo "=== verify"
$A --backward --kernels hopper --heads 4 --kv-heads 2 --seq 77 --seq-k 300 --head-dim 64 --causal --iters 3 || echo "FAILED d64 causal"
$A --backward --kernels hopper --heads 2 --seq 300 --seq-k 77 --head-dim 128 --causal --precision f16 --iters 3 || echo "FAILED d128 f16"
$A --backward --kernels hopper --heads 3 --kv-heads 1 --seq 4097 --head-dim 128 --deterministic --iters 3 || echo "FAILED deterministic"
$A --backward --kernels hopper --heads 2 --seq 1000 --seq-k 3000 --head-dim 64 --deterministic --causal --iters 3 || echo "FAILED deterministic d64"
echo "=== sanitizers"
for t in memcheck racecheck synccheck initcheck; do
  compute-sanitizer --tool $t --error-exitcode 9 $A --backward --kernels hopper --heads 2 --kv-heads 1 --seq 130 --seq-k 77 --head-dim 128 --causal --iters 1 --warmup 0 > /tmp/san/$t.log 2>&1
  echo "$t hopper exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' /tmp/san/$t.log)"
  compute-sanitizer --tool $t --error-exitcode 9 $A --backward --kernels hopper --deterministic --heads 2 --seq 200 --seq-k 300 --head-dim 64 --iters 1 --warmup 0 > /tmp/san/d$t.log 2>&1
  echo "$t hopper deterministic exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' /tmp/san/d$t.log)"
done
echo "=== timing"
for s in "8 16 2048 64" "4 16 4096 64" "8 16 2048 128" "4 16 4096 128" "4 16 4096 128 --causal" "4 16 4096 128 --deterministic" "4 16 4096 128 --causal --deterministic"; do
  set -- $s
  echo "--- $s"
  $A --backward --kernels flash,hopper --batch $1 --heads $2 --seq $3 --head-dim $4 ${5:-} ${6:-} --iters 10 2>&1 | grep "backward |"
done
} > $LOG 2>&1
grep -E "FAILED|exit|---|backward \|" $LOG | head -60
timeout 150 ncu --clock-control none -k regex:attention_backward_hopper --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --metrics lts__t_sectors_op_red.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed \
  $A --backward --kernels hopper --batch 2 --heads 16 --seq 4096 --head-dim 128 --iters 2 --warmup 1 > $OUT/ncu-hopper.txt 2>&1
grep -E "Duration|Throughput|gmma|op_red|lts__|Issued|Eligible|Warp Cycles" $OUT/ncu-hopper.txt
