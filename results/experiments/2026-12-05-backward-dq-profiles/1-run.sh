#!/usr/bin/env bash
# One device call: ncu on the backward's fused steps (d = 128), then the
# grouped / block-scaled GEMM run, each bounded.
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT .device/bin
tar xzf .device/attention.tgz -C .device/bin
A=.device/bin/attention
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee $OUT/gpu.txt
SECS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats"
MET="--metrics lts__t_requests_op_red.sum,lts__t_sectors_op_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sectors_op_atom.sum,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed"
for k in flash hopper; do
  timeout 200 ncu --clock-control none -k regex:attention_backward_${k} --launch-skip 2 --launch-count 1 $SECS $MET \
    $A --backward --kernels $k --batch 2 --heads 16 --seq 4096 --head-dim 128 --iters 2 --warmup 1 > $OUT/ncu-$k.txt 2>&1
  echo "ncu $k exit $?"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy|hmma|op_red|op_atom|lts__throughput|Stall|No Eligible|Issued Warp" $OUT/ncu-$k.txt | head -40
done
echo "=== grouped"
OUT=$OUT/grp ITERS=10 timeout 330 bash results/experiments/2026-12-05-grouped-and-block-scaled/run.sh 2>&1 | tail -60
tar czf $OUT/grp.tgz -C $OUT grp && rm -rf $OUT/grp
