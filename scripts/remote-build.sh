#!/usr/bin/env bash
# Builds the release binaries and the GPU test binary here and copies them,
# stripped, into .device/ (git-ignored) for the device machine to run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bins
# The standalone rust-cuda example, built as its user would (its own
# workspace), into a target folder under ours.
(cd examples/rust-cuda && cargo build --release --target-dir ../../target/example)
test_bin=$(cargo test --release --test gpu --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="gpu"][0])')
rm -rf .device && mkdir -p .device
cp target/release/kernel-lab target/release/transpose target/release/reduce target/release/sgemm target/release/memory-lab target/release/scale target/release/hazards target/release/gemm target/release/attention .device/
# The PTX the binaries embed: the newest build's (older build folders linger).
cp "$(ls -t target/release/build/kernel-lab-*/out/gpu_sm_90.ptx | head -1)" .device/gpu_sm_90.ptx
cp "$test_bin" .device/gpu-tests
cp target/example/release/rust-cuda-example .device/
git rev-parse --short=12 HEAD > .device/git-rev 2>/dev/null || true
strip .device/gemm .device/attention .device/kernel-lab .device/transpose .device/reduce .device/sgemm .device/memory-lab .device/scale .device/hazards .device/gpu-tests .device/rust-cuda-example
du -sh .device
