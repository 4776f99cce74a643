#!/usr/bin/env bash
# ncu on the Hopper attention kernel at d = 64, the build before and after.
set -u
cd "$(dirname "$0")"
for d in base new; do mkdir -p $d && tar xzf $d.tgz -C $d; done
export CUDA_CACHE_MAXSIZE=4294967296
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for b in base new; do
  ncu --clock-control none --launch-skip 3 --launch-count 1 -k regex:attention_hopper_d64 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --csv --page details \
    $b/attention --head-dim 64 --seq 4096 --batch 4 --kernels hopper --iters 3 --warmup 1 > $OUT/ncu-$b.csv 2>$OUT/ncu-$b.err
  echo "== $b"; grep -E "Duration|Stall|Issued Warp|Eligible|Active Warps|No Eligible|SM Frequency" $OUT/ncu-$b.csv | awk -F'","' '{print $(NF-2)" | "$(NF-1)" | "$NF}' | head -40
done
