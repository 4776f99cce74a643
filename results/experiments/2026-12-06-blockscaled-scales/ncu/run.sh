#!/usr/bin/env bash
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p .device/d && tar xf .device/gemm-d.txz -C .device/d
G=.device/d/gemm; export KERNEL_LAB_GIT_REV=$(cat .device/d/git-rev)
ncu --clock-control none -k regex:gemm_blockscaled_e4m3_bf16 -c 1 --section WarpStateStats --section SourceCounters --section SchedulerStats --section ComputeWorkloadAnalysis --section SpeedOfLight --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_uniform.avg.pct_of_peak_sustained_active -o $OUT/bs-d -f $G --block-scaled --precision e4m3 --shape 4096x7168x4096 --out bf16 --iters 1 --warmup 1 --quiet > $OUT/ncu.log 2>&1
echo ncu exit $?
ncu --import $OUT/bs-d.ncu-rep --page source --csv --print-source sass > $OUT/source.csv 2>$OUT/source.err; echo src exit $?; wc -c $OUT/source.csv
ncu --import $OUT/bs-d.ncu-rep --page details > $OUT/details.txt 2>&1
grep -i "gmma\|Throughput\|Issue\|stall" $OUT/details.txt | head -40
xz -9 $OUT/source.csv
