#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there): the binaries built here are
# carried in .device/. Verifies, times, sanitizes and profiles the kernels,
# writing logs under $OUT and a short summary last.
set -uo pipefail
D=.device
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
step() { echo; echo "=== $*"; }
step "gpu tests"
$D/gpu-tests 2>&1 | tee "$OUT/gpu-tests.log" | tail -4
for arg in "$@"; do
  case "$arg" in
  transpose)
    step "transpose 8192 (all candidates)"
    $D/transpose --iters 100 --kernels naive_row,naive_col,shared,padded,fast,fast_guarded,fast64,vec4 2>&1 | tee "$OUT/transpose.log"
    $D/transpose --iters 100 --kernels padded,fast,fast_guarded,fast64,vec4 2>&1 | tail -6
    step "transpose 4096 x 6000"
    $D/transpose --nx 4096 --ny 6000 --iters 50 --kernels padded,fast,fast64,vec4 2>&1 | tail -6
    step "memcheck + racecheck"
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool --error-exitcode 9 $D/transpose --nx 1000 --ny 333 --warmup 0 --iters 1 \
        --kernels naive_row,naive_col,shared,padded,fast,fast_guarded,fast64,vec4 > "$OUT/sanitizer-$tool.log" 2>&1
      echo "$tool exit=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.log" | tr '\n' ' ')"
    done
    step "ncu: shared-memory bank conflicts and global sectors"
    ncu --clock-control none --metrics \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum \
      --csv $D/transpose --nx 1024 --ny 1024 --warmup 0 --iters 1 --kernels naive_row,naive_col,shared,padded,fast,vec4 > "$OUT/ncu-transpose.csv" 2>"$OUT/ncu.err"
    echo "ncu exit=$?"; grep -v '^==' "$OUT/ncu-transpose.csv" | awk -F'","' 'NR>1 {gsub(/"/,"",$0); print $5, $(NF-2), $NF}' | sed 's/(.*)//' | head -40
    ;;
  esac
done
