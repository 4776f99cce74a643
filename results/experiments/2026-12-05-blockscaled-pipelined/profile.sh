#!/usr/bin/env bash
# ncu: block-scaled FP8 (dense 4096x7168x16384) and grouped bf16 with/without bias.
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT .device/new
tar xf .device/gemm-new.txz -C .device/new
G=.device/new/gemm
SECS="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats"
MET="--metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio"
timeout 200 ncu --clock-control none -k regex:gemm_blockscaled --launch-skip 3 --launch-count 1 $SECS $MET \
  $G --block-scaled --precision e4m3 --shape 4096x7168x16384 --out bf16 --iters 3 --warmup 1 > $OUT/ncu-bs.txt 2>&1; echo "bs exit $?"
timeout 200 ncu --clock-control none -k regex:gemm_wgmma_e4m3 --launch-skip 3 --launch-count 1 $SECS $MET \
  $G --precision e4m3 --shape 4096x7168x16384 --out bf16 --iters 3 --warmup 1 > $OUT/ncu-pt.txt 2>&1; echo "pt exit $?"
for b in "" --bias; do
timeout 150 ncu --clock-control none -k regex:gemm_grouped_bf16 --launch-skip 2 --launch-count 1 $SECS $MET \
  $G --groups 8 --shape 4096x4096x7168 $b --out bf16 --iters 3 --warmup 1 > $OUT/ncu-grp$b.txt 2>&1; echo "grp $b exit $?"
done
for f in $OUT/ncu-*.txt; do echo "=== $f"; grep -E "^  [a-z_]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy|gmma|pipe_fma|stalled|Issued Warp|No Eligible|Block Size|Grid Size|Dynamic Shared" $f | head -30; done
