#!/usr/bin/env bash
# Runs on the GPU machine, which has no Rust: the binaries built here are
# carried in .device/ (scripts/remote-build.sh puts them there).
#   bash scripts/remote-run.sh tests suite sanitize ncu limits sass lab hazards rustcuda
# Writes under $OUT: results.json (the suite; its plots go into the logs, and
# `kernel-lab report --plots` redraws them from the JSON), checks.txt (what
# `kernel-lab report --checks` puts into BENCHMARKS.md), sanitizers.txt (the
# labelled hazard suite under each compute-sanitizer tool, for `hazards
# report`), logs.tar.gz.
set -uo pipefail
D=.device
OUT=${OUT:-/tmp/out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KERNEL_LAB_GIT_REV=$(cat $D/git-rev 2>/dev/null || echo unknown)
CHECKS=$OUT/checks.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
step() { echo; echo "=== $*"; }
sanitize() { # tool name command...
  local tool=$1 name=$2; shift 2
  compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$LOGS/sanitize-$name-$tool.log" 2>&1
  echo "compute-sanitizer --tool $tool, $name: exit $?, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize-$name-$tool.log" | sed 's/=* *//' | tr '\n' ' ')" | tee -a "$CHECKS"
}
for section in "$@"; do
  case "$section" in
  tests)
    step "gpu tests"
    $D/gpu-tests 2>&1 | tee "$LOGS/gpu-tests.log" | tee -a "$CHECKS" ;;
  suite)
    step "suite"
    $D/kernel-lab --quiet --json "$OUT/results.json" --plots "$LOGS/plots" 2>&1 | tee "$LOGS/suite.log" ;;
  sanitize)
    step "compute-sanitizer"
    for tool in memcheck racecheck synccheck initcheck; do
      sanitize $tool transpose $D/transpose --sizes 1000x333 --warmup 0 --iters 1
      sanitize $tool reduce $D/reduce --sizes 1000003 --warmup 0 --iters 1
      sanitize $tool sgemm $D/sgemm --sizes 300 --warmup 0 --iters 1
      sanitize $tool sgemm-shapes $D/sgemm --shape 130x68x203 --shape 67x301x1000 --tile 64x64,128x128 --splits 1,3 --warmup 0 --iters 1
      sanitize $tool tensor $D/kernel-lab --only tensor --sizes 70x45x37,300,130x520x1000,67x517x100 --warmup 0 --iters 1
      sanitize $tool memory-lab $D/memory-lab --sizes 100000 --iters 0
      sanitize $tool scale $D/scale --sizes 1000003 --warmup 0 --iters 1
    done ;;
  ncu)
    step "ncu --clock-control none: transpose 1024 x 1024" | tee -a "$CHECKS"
    ncu --clock-control none --csv --metrics \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum \
      $D/transpose --sizes 1024 --iters 0 > "$LOGS/ncu-transpose.csv" 2>"$LOGS/ncu-transpose.err"
    python3 scripts/ncu-summary.py "$LOGS/ncu-transpose.csv" | tee -a "$CHECKS"
    step "ncu --clock-control none: transpose 8191 x 8193 (output rows start inside sectors)" | tee -a "$CHECKS"
    ncu --clock-control none --csv -k regex:'transpose_(padded|fast)' --metrics \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum \
      $D/transpose --sizes 8191x8193 --iters 0 --kernels padded,fast > "$LOGS/ncu-transpose-odd.csv" 2>"$LOGS/ncu-transpose-odd.err"
    python3 scripts/ncu-summary.py "$LOGS/ncu-transpose-odd.csv" | tee -a "$CHECKS"
    step "ncu --clock-control none: sgemm 1024^3" | tee -a "$CHECKS"
    ncu --clock-control none --csv -k regex:sgemm --metrics \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum \
      $D/sgemm --sizes 1024 --iters 0 --kernels reg_2d,vec4,double_buffer,warp_tiled,tuned,wide,wide_async > "$LOGS/ncu-sgemm.csv" 2>"$LOGS/ncu-sgemm.err"
    python3 scripts/ncu-summary.py "$LOGS/ncu-sgemm.csv" | tee -a "$CHECKS" ;;
  limits)
    # What separates the dispatcher's 128 x 128 tile from cuBLAS at 4096^3
    # (the stretch target): the first launch of each kernel.
    step "ncu --clock-control none: sgemm 4096^3 row NN, the dispatcher's kernel and cuBLAS's" | tee -a "$CHECKS"
    for kernels in '^gemm_' 'xmma|cutlass|sgemm'; do
      ncu --clock-control none -k regex:"$kernels" --launch-count 1 --metrics \
gpu__time_duration.sum,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,launch__registers_per_thread,launch__block_size,launch__grid_size,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_not_selected_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \
        $D/sgemm --shape 4096x4096x4096 --warmup 0 --iters 1 > "$LOGS/ncu-limits.txt" 2>&1
      grep -E '^  [a-zA-Z_0-9]+.*\(|^    (gpu__|sm__|smsp__|launch__|l1tex__)' "$LOGS/ncu-limits.txt" | tee -a "$CHECKS"
    done
    # Each tensor-core kernel, and cuBLAS's bf16 kernel, at 4096^3 (and
    # the fastest at 8192^3): how busy the tensor pipe is, what the warps
    # wait for, how much of L2 and DRAM they use.
    step "ncu --clock-control none: tensor, each tensor-core kernel and cuBLAS's" | tee -a "$CHECKS"
    # A third word limits the run to those kernels (the f16 or tf32 ones:
    # then cuBLAS's first kernel is its f16 or TF32 one).
    for run in "4096 ^tc_mma_bf16$" "4096 ^tc_ldmatrix_bf16$" "4096 ^tc_mma_bf16_async$" "4096 ^tc_wgmma_bf16$" "4096 ^tc_wgmma_ws_bf16$" \
               "4096 ^tc_wgmma_persistent_bf16$" "4096 ^tc_wgmma_cluster_bf16$" "4096 nvjet|xmma|cutlass" \
               "8192 ^tc_wgmma_persistent_bf16$" "8192 ^tc_wgmma_cluster_bf16$" "8192 nvjet|xmma|cutlass" \
               "4096 ^tc_wgmma_persistent_f16$ tc_wgmma_persistent_f16" "4096 nvjet|xmma|cutlass tc_wgmma_persistent_f16" \
               "4096 ^tc_wgmma_persistent_tf32$ tc_wgmma_persistent_tf32" "4096 nvjet|xmma|cutlass tc_wgmma_persistent_tf32" \
               "8192 ^tc_wgmma_persistent_tf32$ tc_wgmma_persistent_tf32" "8192 nvjet|xmma|cutlass tc_wgmma_persistent_tf32"; do
      set -- $run
      only=${3:+--kernels $3}
      ncu --clock-control none -k regex:"$2" --launch-count 1 --metrics \
gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,launch__registers_per_thread,launch__grid_size,launch__block_size,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,lts__t_sector_hit_rate.pct,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed \
        $D/kernel-lab --only tensor --sizes $1 $only --warmup 0 --iters 1 > "$LOGS/ncu-tensor.txt" 2>&1
      echo "tensor $1^3${3:+ (${3##*_})}:" | tee -a "$CHECKS"
      grep -E '^  [a-zA-Z_0-9]+.*\(|^    (gpu__|sm__|smsp__|launch__|l1tex__|dram__|lts__)' "$LOGS/ncu-tensor.txt" | tee -a "$CHECKS"
    done ;;
  lab)
    step "memory lab"
    $D/memory-lab 2>&1 | tee "$LOGS/memory-lab.log"
    step "ncu --clock-control none: memory lab, bank study and stride sweep (one launch per variant)" | tee -a "$CHECKS"
    echo "(lab_copy_stride#k is stride 1, 2, 4, 8, 16, 32 for k = 1..6)" | tee -a "$CHECKS"
    ncu --clock-control none --csv -k regex:'lab_bank|lab_copy_stride' --metrics \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum \
      $D/memory-lab --sizes 1048576 --iters 0 > "$LOGS/ncu-lab.csv" 2>"$LOGS/ncu-lab.err"
    python3 scripts/ncu-summary.py "$LOGS/ncu-lab.csv" --all | tee -a "$CHECKS" ;;
  rustcuda)
    step "the rust-cuda example on the GPU, and under memcheck and racecheck" | tee -a "$CHECKS"
    $D/rust-cuda-example 2>&1 | tee "$LOGS/rust-cuda-example.log" | tee -a "$CHECKS"
    for tool in memcheck racecheck synccheck; do
      sanitize $tool rust-cuda-example $D/rust-cuda-example
    done ;;
  hazards)
    step "the labelled hazard suite under compute-sanitizer (one process per kernel and tool)"
    H=$OUT/sanitizers.txt
    echo "device: $($D/hazards device), git $KERNEL_LAB_GIT_REV" > "$H"
    for tool in memcheck racecheck synccheck initcheck; do
      (for k in $($D/hazards list); do
        log=$LOGS/hazard-$tool-$k.log
        timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $D/hazards run $k > "$log" 2>&1
        rc=$?
        case $rc in
          0) if grep -qE 'SUMMARY: [1-9][0-9]* (hazard|error)|[1-9][0-9]* warning' "$log"; then o=reported; else o=silent; fi ;;
          9) o=reported ;;
          124|137) o=hang ;;
          *) o=failed ;;
        esac
        echo "$tool $k $o"
      done > "$OUT/hazards-$tool.txt") &
    done
    wait
    cat "$OUT"/hazards-*.txt >> "$H" && rm "$OUT"/hazards-*.txt
    grep -c . "$H" ;;
  sass)
    step "SASS (ptxas + cuobjdump on the device)" | tee -a "$CHECKS"
    ptxas -arch=sm_90 $D/gpu_sm_90.ptx -o /tmp/gpu.cubin && cuobjdump -sass /tmp/gpu.cubin > "$LOGS/sass.txt"
    python3 scripts/sass-summary.py < "$LOGS/sass.txt" | tee -a "$CHECKS" ;;
  esac
done
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
