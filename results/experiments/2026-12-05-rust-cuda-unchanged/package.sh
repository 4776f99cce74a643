#!/usr/bin/env bash
# Builds what run.sh runs on the GPU machine and packs it into
# .device/unchanged.tgz (carry .device):
#   results/experiments/2026-12-05-rust-cuda-unchanged/package.sh RUST_CUDA_CHECKOUT
# - the GPU test binary (cpu/tests/gpu.rs; run.sh filters it to the
#   cuda_std conformance, which launches glam values by value);
# - the example's binaries and its tests/library.rs binary (the PTX with
#   the host library's line, launched through lab-cust on the GPU);
# - rust-cuda's vecadd and sha2_crates_io, unchanged
#   (scripts/rust-cuda-examples).
set -euo pipefail
cd "$(dirname "$0")/../../.."
src="${1:?usage: package.sh RUST_CUDA_CHECKOUT}"
json_exe() { python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]==sys.argv[1]: print(m["executable"])' "$1"; }
gpu_tests=$(cargo test --release --test gpu --no-run --message-format=json 2>/dev/null | json_exe gpu | tail -1)
(cd examples/rust-cuda && cargo build --release --target-dir ../../target/example)
library_test=$(cd examples/rust-cuda && cargo test --release --test library --no-run --target-dir ../../target/example \
    --message-format=json 2>/dev/null | json_exe library | tail -1)
scripts/rust-cuda-examples "$src" target/rust-cuda-examples > /dev/null
rm -rf .device/pkg && mkdir -p .device/pkg
cp "$gpu_tests" .device/pkg/gpu-tests
cp target/example/release/{rust-cuda-example,cust_vecadd,cust_sha256} .device/pkg/
cp "$library_test" .device/pkg/example-library-test
cp target/rust-cuda-examples/target/release/vecadd .device/pkg/rc-vecadd
cp target/rust-cuda-examples/target/release/sha2_crates_io .device/pkg/rc-sha2_crates_io
strip .device/pkg/*
git rev-parse --short=12 HEAD > .device/pkg/git-rev
(cd .device && tar czf unchanged.tgz -C pkg .) && rm -rf .device/pkg
ls -la .device/unchanged.tgz
