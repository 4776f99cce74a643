#!/usr/bin/env bash
# Block-scaled FP8: new (c80a09c, four stages) against p (four stages, the
# scales multiplied a stage later and prefetched into L1 four blocks ahead).
export PATH=/usr/local/cuda/bin:$PATH
for v in new p; do mkdir -p .device/$v && tar xf .device/gemm-$v.txz -C .device/$v; done
row() { grep -h "^| " "$1" | grep -v -- "---" | grep -v "^| call" | cut -d'|' -f2,5-10 | sed "s/^/$2 /"; }
for round in 1 2; do for v in new p; do
  G=.device/$v/gemm; export KERNEL_LAB_GIT_REV=$(cat .device/$v/git-rev)
  $G --block-scaled --precision e4m3 --shape 4096x7168x4096 --out bf16 --iters 20 --quiet > "$OUT/bs-$v-$round.md" 2>&1 || echo FAILED bs $v
  echo "t=$SECONDS"; row "$OUT/bs-$v-$round.md" "$v $round"
done; done
for v in new p; do
  G=.device/$v/gemm; export KERNEL_LAB_GIT_REV=$(cat .device/$v/git-rev)
  $G --block-scaled --precision e4m3 --shape 4096x7168x16384 --out bf16 --iters 20 --quiet > "$OUT/big-$v.md" 2>&1 || echo FAILED big $v
  echo "t=$SECONDS"; row "$OUT/big-$v.md" "$v big"
  $G --block-scaled --precision e4m3 --groups 8 --shape 4096x4096x7168 --out bf16 --iters 20 --quiet > "$OUT/grouped-$v.md" 2>&1 || echo FAILED grouped $v
  echo "t=$SECONDS"; grep -h "^| e4m3" "$OUT/grouped-$v.md" | sed "s/^/$v grouped /"
done
for t in racecheck memcheck; do
  compute-sanitizer --tool $t --error-exitcode 9 .device/p/gemm --block-scaled --precision e4m3 --shape 150x264x1640 --out f32 --iters 1 --warmup 0 > "$OUT/san-$t.log" 2>&1
  echo "$t exit $? t=$SECONDS"
done
