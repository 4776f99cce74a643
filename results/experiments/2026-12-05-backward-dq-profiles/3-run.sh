#!/usr/bin/env bash
# The backward's fused steps after the dQ rework: verify, sanitize, sweep with torch's peers, profile.
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT .device/bin /tmp/san
tar xzf .device/attention.tgz -C .device/bin
A=.device/bin/attention
LOG=$OUT/bwd3.log
{
nvidia-smi --query-gpu=name --format=csv,noheader
echo "=== verify"
$A --backward --kernels flash,hopper --heads 4 --kv-heads 2 --seq 77 --seq-k 300 --head-dim 64 --causal --iters 3 || echo "FAILED d64 causal"
$A --backward --kernels flash,hopper --heads 2 --seq 300 --seq-k 77 --head-dim 128 --causal --precision f16 --iters 3 || echo "FAILED d128 f16"
$A --backward --kernels flash,hopper --heads 3 --kv-heads 1 --seq 4097 --head-dim 128 --deterministic --iters 3 || echo "FAILED deterministic"
$A --backward --kernels flash,hopper --heads 2 --seq 1000 --seq-k 3000 --head-dim 64 --deterministic --causal --iters 3 || echo "FAILED deterministic d64"
echo "=== sanitizers"
for t in memcheck racecheck synccheck initcheck; do
  for k in flash hopper; do
  compute-sanitizer --tool $t --error-exitcode 9 $A --backward --kernels $k --heads 2 --kv-heads 1 --seq 130 --seq-k 77 --head-dim 128 --causal --iters 1 --warmup 0 > /tmp/san/$k$t.log 2>&1
  echo "$t $k exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' /tmp/san/$k$t.log)"
  compute-sanitizer --tool $t --error-exitcode 9 $A --backward --kernels $k --deterministic --heads 2 --seq 200 --seq-k 300 --head-dim 64 --iters 1 --warmup 0 > /tmp/san/d$k$t.log 2>&1
  echo "$t $k deterministic exit $? $(grep -c 'ERROR SUMMARY: 0 errors\|RACECHECK SUMMARY: 0 hazards' /tmp/san/d$k$t.log)"
  done
done
echo "=== deterministic cost"
for s in "4 16 4096 128" "4 16 4096 128 --causal" "8 16 2048 64"; do
  set -- $s
  echo "--- $s"
  $A --backward --kernels flash,hopper --batch $1 --heads $2 --seq $3 --head-dim $4 ${5:-} --iters 10 2>&1 | grep "backward |"
  $A --backward --kernels flash,hopper --batch $1 --heads $2 --seq $3 --head-dim $4 ${5:-} --deterministic --iters 10 2>&1 | grep "backward |"
done
} > $LOG 2>&1
grep -E "^NVIDIA|FAILED|exit|---|backward \|" $LOG | head -60
timeout 200 $A --backward --sweep --kernels flash,hopper --iters 10 --json "$OUT/backward-sweep.json" > "$OUT/backward-sweep-bf16.md" 2>&1 || echo "FAILED sweep"
grep -h "backward |" "$OUT/backward-sweep-bf16.md"
(cd scripts && timeout 150 python3 torch-sdpa-backward.py --iters 10) > "$OUT/torch-sdpa-backward-bf16.md" 2>&1
cat "$OUT/torch-sdpa-backward-bf16.md" | tail -20
timeout 100 ncu --clock-control none -k regex:attention_backward_flash --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --metrics lts__t_sectors_op_red.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum \
  $A --backward --kernels flash --batch 2 --heads 16 --seq 4096 --head-dim 128 --iters 2 --warmup 1 > $OUT/ncu-flash.txt 2>&1
grep -E "Duration|Throughput|hmma|op_red|wavefronts|inst_executed|Issued|Eligible|Warp Cycles|Busy" $OUT/ncu-flash.txt | head -20
