#!/usr/bin/env bash
# Per-tensor FP8, the plan's tiles and 128x128; block-scaled; each in the
# four-stage baseline (new, c80a09c) and in d (the scales multiplied a stage
# later, the schedule's counts 32-bit).
export PATH=/usr/local/cuda/bin:$PATH
for v in new d; do mkdir -p .device/$v && tar xf .device/gemm-$v.txz -C .device/$v; done
S=${S:-4096x7168x4096}
for round in 1 2; do
for v in new d; do
  G=.device/$v/gemm; export KERNEL_LAB_GIT_REV=$(cat .device/$v/git-rev)
  for t in plan 128; do
    T=; [ $t = plan ] || T="--tile $t"
    $G --precision e4m3 --op-b t $T --shape $S --out bf16 --iters 20 --quiet > "$OUT/pt-$v-$t-$round.md" 2>&1 || echo FAILED $t
    echo "t=$SECONDS"; grep -h "^| " "$OUT/pt-$v-$t-$round.md" | grep -v -- "---" | grep -v "^| precision" | cut -d'|' -f4,7-11 | sed "s/^/pt $v $t $round /"
  done
  $G --block-scaled --precision e4m3 --shape $S --out bf16 --iters 20 --quiet > "$OUT/bs-$v-$round.md" 2>&1 || echo FAILED bs $v
  echo "t=$SECONDS"; grep -h "^| " "$OUT/bs-$v-$round.md" | grep -v -- "---" | grep -v "^| call" | cut -d'|' -f2,5-10 | sed "s/^/bs $v $round /"
done
done
echo total $SECONDS s
