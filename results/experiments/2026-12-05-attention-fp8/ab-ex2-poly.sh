set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p $OUT .device/a .device/b
export PATH=/usr/local/cuda/bin:$PATH
tar xzf .device/attention-a.tgz -C .device/a
tar xzf .device/attention-b.tgz -C .device/b
for round in 1 2; do
  for v in a b; do
    export KERNEL_LAB_GIT_REV=$(cat .device/$v/git-rev)
    for shape in "--batch 4 --heads 16 --seq 4096 --head-dim 128" "--batch 2 --heads 16 --seq 8192 --head-dim 128" "--batch 4 --heads 16 --seq 4096 --head-dim 128 --causal" "--batch 8 --heads 16 --seq 2048 --head-dim 64" "--batch 4 --heads 8 --seq 4096 --head-dim 256"; do
      .device/$v/attention --precision e4m3 $shape --iters 30 2>&1 | grep "e4m3 |\|RMSE\|uniform\|outliers\|error" | grep -v "+vt" | sed "s/^/$v$round /"
    done
  done
done | tee $OUT/abpoly.txt
# ncu on b
ncu --clock-control none -k regex:attention_hopper_e4m3 --launch-skip 3 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --metrics sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active \
  .device/b/attention --precision e4m3 --batch 4 --heads 16 --seq 4096 --head-dim 128 --iters 2 --warmup 1 > $OUT/ncu-b.txt 2>&1
grep "hopper |" $OUT/abpoly.txt
grep -E "Duration|Issue Slots|pipe_|Throughput" $OUT/ncu-b.txt
