#!/usr/bin/env bash
# GPU run (one call): what lets an unchanged rust-cuda program run here,
# on the GPU side. The PTX with the host library's line first loads in the
# driver; values by value (glam's Mat4, Vec3, Vec2 through lab-runtime,
# Mat3 and Vec3 through lab-cust) reach the kernels; rust-cuda's own
# vecadd and sha2_crates_io, built unchanged against this workspace
# (scripts/rust-cuda-examples), run. Package here first: package.sh
# (beside this) puts the GPU test binary, the example's binaries and its
# tests/library.rs binary, and the two rust-cuda programs into
# .device/unchanged.tgz. Not run yet: no GPU was lent on 2026-12-05.
set -uo pipefail
NAME=rust-cuda-unchanged BINARIES=unchanged source scripts/device-env.sh
B=.device/bin
run() { echo "== $*" | tee -a "$LOG"; "$@" 2>&1 | tee -a "$LOG"; echo "exit ${PIPESTATUS[0]}" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$LOG"
run $B/gpu-tests cuda_std_conformance launch_rejects_wrong_buffers
run $B/example-library-test --nocapture
run $B/rust-cuda-example
run $B/cust_vecadd 100001
run $B/cust_sha256 5000 77
run $B/rc-vecadd
run $B/rc-sha2_crates_io
for tool in memcheck racecheck initcheck; do
  run compute-sanitizer --tool $tool --error-exitcode 9 $B/example-library-test
done
run compute-sanitizer --tool memcheck --error-exitcode 9 $B/gpu-tests cuda_std_conformance
echo "== summary" | tee -a "$LOG"
grep -E "^== |^exit |passed|Results match|every element|digests differ|ERROR SUMMARY|test .* (ok|FAILED)" "$LOG" | tail -60
