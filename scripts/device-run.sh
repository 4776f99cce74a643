#!/usr/bin/env bash
# Runs on the GPU machine, which has no Rust: the binaries built here are
# carried in .device/ (scripts/device-build.sh puts them there). Verifies,
# times, sanitizes and profiles the families named as arguments, writing
# logs under $OUT.
#   bash scripts/device-run.sh tests transpose reduce sanitize ncu
set -uo pipefail
D=.device
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
step() { echo; echo "=== $*"; }
sanitize() { # tool name command...
  local tool=$1 name=$2; shift 2
  compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "$OUT/sanitize-$name-$tool.log" 2>&1
  echo "$tool $name: exit=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$name-$tool.log" | tr '\n' ' ')"
}
for section in "$@"; do
  case "$section" in
  tests)
    step "gpu tests"
    $D/gpu-tests 2>&1 | tee "$OUT/gpu-tests.log" ;;
  transpose)
    step "transpose"
    $D/transpose --iters 100 2>&1 | tee "$OUT/transpose.log"
    $D/transpose --nx 4096 --ny 6000 --iters 50 2>&1 | tail -7 ;;
  reduce)
    step "reduce"
    $D/reduce --iters 50 2>&1 | tee "$OUT/reduce.log" ;;
  sgemm)
    step "sgemm"
    $D/sgemm --iters 20 2>&1 | tee "$OUT/sgemm.log" | grep -v '^  ' ;;
  sass)
    step "SASS of the sgemm and transpose kernels (ptxas + cuobjdump on the device)"
    ptxas -arch=sm_90 $D/gpu_sm_90.ptx -o /tmp/gpu.cubin && cuobjdump -sass /tmp/gpu.cubin > "$OUT/sass.txt"
    python3 scripts/sass-summary.py < "$OUT/sass.txt" ;;
  sanitize)
    step "compute-sanitizer"
    for tool in memcheck racecheck; do
      sanitize $tool transpose $D/transpose --nx 1000 --ny 333 --warmup 0 --iters 1
      sanitize $tool reduce $D/reduce --n 1000003 --warmup 0 --iters 1
      sanitize $tool sgemm $D/sgemm --sizes 300 --iters 3
    done ;;
  ncu)
    step "ncu: shared-memory wavefronts and global sectors per request"
    ncu --clock-control none --csv --metrics \
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum \
      $D/transpose --nx 1024 --ny 1024 --warmup 0 --iters 1 > "$OUT/ncu-transpose.csv" 2>"$OUT/ncu.err"
    echo "ncu exit=$?" ;;
  esac
done
