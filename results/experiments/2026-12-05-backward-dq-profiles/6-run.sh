#!/usr/bin/env bash
# A/B: the Hopper backward with S and dP issued together (b) against 47e7b3a (a).
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p $OUT .device/a .device/b
tar xzf .device/attention.tgz -C .device/a
tar xzf .device/attention-b.tgz -C .device/b
nvidia-smi --query-gpu=name --format=csv,noheader
B=.device/b/attention
echo "=== verify b"
$B --backward --kernels hopper --heads 4 --kv-heads 2 --seq 77 --seq-k 300 --head-dim 64 --causal --iters 3 2>&1 | grep "backward |" || echo "FAILED d64 causal"
$B --backward --kernels hopper --heads 2 --seq 300 --seq-k 77 --head-dim 128 --causal --precision f16 --iters 3 2>&1 | grep "backward |" || echo "FAILED d128 f16"
$B --backward --kernels hopper --heads 3 --kv-heads 1 --seq 4097 --head-dim 128 --deterministic --iters 3 2>&1 | grep "backward |" || echo "FAILED deterministic"
compute-sanitizer --tool racecheck --error-exitcode 9 $B --backward --kernels hopper --heads 2 --kv-heads 1 --seq 130 --seq-k 77 --head-dim 128 --causal --iters 1 --warmup 0 > /tmp/rc.log 2>&1; echo "racecheck b exit $?"
echo "=== timing (a then b, twice)"
for s in "8 16 2048 64" "4 16 4096 64" "4 16 4096 128" "4 16 4096 128 --causal"; do
  set -- $s
  for r in 1 2; do for v in a b; do
    echo "$v $s: $(.device/$v/attention --backward --kernels hopper --batch $1 --heads $2 --seq $3 --head-dim $4 ${5:-} --iters 20 2>&1 | grep 'backward |' | awk -F'|' '{print $6, $7}')"
  done; done
done
