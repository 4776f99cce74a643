#!/usr/bin/env bash
# A first run on a fresh GPU machine, before and after this session's
# build changes (compressed PTX, no debug info): each binary runs one
# bf16 call twice with a JIT cache of its own, empty at the first run (the
# driver compiles each kernel's PTX module when it is first launched),
# filled at the second. Then the gemm verification section with the new
# binary. Run from the repository root on the device machine, with
# .device/gemm-old.tgz (the binary before) and .device/gemm.tgz (after).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
(cd .device && mkdir -p old new && tar xzf gemm-old.tgz -C old && tar xzf gemm.tgz -C new)
ls -la .device/old .device/new
for b in old new; do
  export CUDA_CACHE_PATH=$(mktemp -d)
  for run in fresh cached; do
    s=$(date +%s%N)
    .device/$b/gemm --precision bf16 --out bf16 --shape 1000x1000x1000 --iters 3 --warmup 1 > "$OUT/$b-$run.log" 2>&1
    rc=$?
    echo "first-launch $b $run: exit $rc, $(( ($(date +%s%N) - s) / 1000000 )) ms (binary $(stat -c %s .device/$b/gemm) bytes, rev $(cat .device/$b/git-rev))"
  done
done
cp .device/new/gemm .device/gemm && cp .device/new/git-rev .device/git-rev
OUT=$OUT bash scripts/remote-gemm.sh verify
grep -h "FAILED" "$OUT/gemm.log" | head
