#!/usr/bin/env bash
# The tensor-core GEMM library call on the GPU machine (binaries built by
# scripts/remote-build.sh into .device/): verification at odd shapes in
# every layout and precision, compute-sanitizer on small calls, then the
# public sweep against cuBLAS per precision. Prints the tables last.
set -uo pipefail
D=.device
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# The revision the binaries were built from (remote-build.sh writes it;
# there is no checkout here): the sweep tables record it.
export KERNEL_LAB_GIT_REV=${KERNEL_LAB_GIT_REV:-$(cat $D/git-rev 2>/dev/null || echo unknown)}
LOG=$OUT/gemm.log
[ -n "${KEEP_LOG:-}" ] || : > "$LOG"
# One line: the library kernel's third launch under ncu, caches left warm
# as in a timed loop (its time, busiest SM's active cycles, grid), of
# binary $1 (in $D) with gemm's arguments after it.
warm_ncu() {
  local bin=$1; shift
  ncu --cache-control none --clock-control none --csv --metrics gpu__time_duration.sum,sm__cycles_active.max,launch__grid_size \
    -k regex:gemm_wgmma --launch-skip 2 --launch-count 1 $D/$bin "$@" --iters 3 --warmup 0 > "$OUT/warm.csv" 2>/dev/null
  echo "$bin $* :: $(python3 scripts/ncu-table.py "$OUT/warm.csv" | sed 's/  */ /g; s/ *0 gemm_wgmma_[a-z0-9_]*//')"
}
for section in "$@"; do
  case "$section" in
  verify)
    echo "=== gemm: verification at odd shapes, every layout and op" | tee -a "$LOG"
    for p in bf16 f16 tf32 f32; do
      for l in row col; do for a in n t; do for b in n t; do
        $D/gemm --precision $p --out bf16 --shape 4095x1000x333,77x5003x129 --layout $l --op-a $a --op-b $b \
          --alpha 0.5 --beta 1 --iters 3 --warmup 1 >> "$LOG" 2>&1 || echo "FAILED $p $l $a $b" | tee -a "$LOG"
      done; done; done
    done
    $D/gemm --precision bf16 --out f16 --shape 1000x3000x2000 --batch 3 --bias --act gelu --iters 3 >> "$LOG" 2>&1 || echo "FAILED batch/epilogue" | tee -a "$LOG"
    $D/gemm --precision bf16 --shape 128x8192x8192 --splits 4 --iters 3 >> "$LOG" 2>&1 || echo "FAILED splits" | tee -a "$LOG"
    grep -c '^| ' "$LOG" ;;
  decode)
    # The decode path (m or n at most 16) in every precision: verified,
    # timed against cuBLAS(Lt) and against a copy of the weight's bytes.
    echo "=== gemm: decode shapes" | tee -a "$LOG"
    SHAPES=${DECODE_SHAPES:-1x4096x4096,4x8192x8192,16x14336x4096,8x4096x14336,1x16384x8192,3x12289x5003,16x4097x8191,13x28672x4096,8192x1x8192,14336x16x4096}
    for p in ${DECODE_PRECISIONS:-bf16 f16 tf32 e4m3 e5m2}; do
      for b in n t; do
        case $p in f32|bf16|f16) ;; *) [ $b = t ] || continue ;; esac
        scales=""; case $p in e4m3|e5m2) scales="--scale-a 0.5 --scale-b 2" ;; esac
        # Each precision's own output (cuBLAS takes f16 in with f16 or f32 out only).
        out=bf16; case $p in f16) out=f16 ;; f32|tf32) out=f32 ;; esac
        $D/gemm --precision $p --out $out --shape "$SHAPES" --op-b $b $scales --iters ${DECODE_ITERS:-50} > "$OUT/decode-$p-$b.md" 2>&1 \
          || echo "FAILED decode $p $b" | tee -a "$LOG"
        cat "$OUT/decode-$p-$b.md" >> "$LOG"
      done
    done ;;
  ncu-decode)
    # Where a decode call's time goes: memory throughput, occupancy, stalls.
    for args in "--precision bf16 --shape 1x16384x8192" "--precision bf16 --shape 16x14336x4096" "--precision e4m3 --shape 16x14336x4096 --op-b t"; do
      echo "=== ncu decode: $args" | tee -a "$LOG"
      ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
        -k regex:gemm_decode --launch-skip 2 --launch-count 1 $D/gemm $args --iters 3 --warmup 0 2>&1 \
        | grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Grid Size|Stall|Warp Cycles Per Issued|Waves Per SM" | tee -a "$LOG"
    done ;;
  sanitize-decode)
    for tool in memcheck racecheck synccheck initcheck; do
      for p in bf16 e4m3; do
        b=n; [ $p = e4m3 ] && b=t
        compute-sanitizer --tool $tool --error-exitcode 9 $D/gemm --precision $p --out bf16 --shape 5x700x3000,300x9x777,16x64x64 \
          --op-b $b --beta 1 --bias --act relu --iters 1 --warmup 0 > "$OUT/sanitize-decode-$p-$tool.log" 2>&1
        echo "compute-sanitizer $tool gemm decode $p: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-decode-$p-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      done
    done ;;
  verify-fp8)
    echo "=== gemm: FP8 verification at odd shapes, every layout and op, with scales" | tee -a "$LOG"
    for p in e4m3 e5m2; do
      for l in row col; do for a in n t; do for b in n t; do
        $D/gemm --precision $p --out bf16 --shape 4095x1000x333,77x5003x129 --layout $l --op-a $a --op-b $b \
          --alpha 0.5 --beta 1 --scale-a 0.25 --scale-b 3 --iters 3 --warmup 1 >> "$LOG" 2>&1 || echo "FAILED $p $l $a $b" | tee -a "$LOG"
      done; done; done
    done
    $D/gemm --precision e4m3 --out f32 --shape 1000x3000x2048 --layout col --op-a t --batch 3 --bias --act gelu --iters 3 >> "$LOG" 2>&1 || echo "FAILED fp8 batch/epilogue" | tee -a "$LOG"
    $D/gemm --precision bf16 --out bf16 --shape 4096x4096x4096,8192x8192x1024 --layout col --op-a t --bias --act gelu --iters 10 >> "$LOG" 2>&1 || echo "FAILED bf16 epilogue vs cuBLASLt" | tee -a "$LOG"
    grep -c '^| ' "$LOG" ;;
  sanitize-fp8)
    for tool in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $tool --error-exitcode 9 $D/gemm --precision e4m3 --out bf16 --shape 300x200x100,67x130x257 \
        --layout col --op-a t --beta 1 --bias --act relu --iters 1 --warmup 0 > "$OUT/sanitize-fp8-$tool.log" 2>&1
      echo "compute-sanitizer $tool gemm e4m3: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-fp8-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
    done ;;
  torch-fp8)
    echo "=== torch._scaled_mm FP8 peer" | tee -a "$LOG"
    python3 scripts/torch-fp8.py --dtype e4m3 > "$OUT/torch-fp8.md" 2>&1; echo "exit $?" >> "$OUT/torch-fp8.md" ;;
  gpu-tests)
    echo "=== gpu-tests" | tee -a "$LOG"
    $D/gpu-tests > "$OUT/gpu-tests.log" 2>&1; echo "gpu-tests exit $?" | tee -a "$LOG"
    grep -E "^test |test result|calls, worst" "$OUT/gpu-tests.log" | tail -40 | tee -a "$LOG" ;;
  sanitize)
    for tool in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $tool --error-exitcode 9 $D/gemm --precision bf16 --out bf16 --shape 300x200x100,67x130x257 \
        --layout col --op-a t --beta 1 --bias --act relu --iters 1 --warmup 0 > "$OUT/sanitize-$tool.log" 2>&1
      echo "compute-sanitizer $tool gemm: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      # k split three ways: the partial sums, the tickets and the fix-up.
      compute-sanitizer --tool $tool --error-exitcode 9 $D/gemm --precision bf16 --out bf16 --shape 200x300x2000,67x130x777 \
        --splits 3 --beta 1 --bias --act gelu --iters 1 --warmup 0 > "$OUT/sanitize-splits-$tool.log" 2>&1
      echo "compute-sanitizer $tool gemm splits: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-splits-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      # 128 x 128 tiles, k split and not, 16-bit and FP8.
      for s in 1 3; do
        compute-sanitizer --tool $tool --error-exitcode 9 $D/gemm --precision bf16 --out bf16 --shape 200x300x2000,67x130x777 \
          --tile 128 --splits $s --beta 1 --bias --act gelu --iters 1 --warmup 0 > "$OUT/sanitize-narrow-$s-$tool.log" 2>&1
        echo "compute-sanitizer $tool gemm narrow splits $s: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-narrow-$s-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
        compute-sanitizer --tool $tool --error-exitcode 9 $D/gemm --precision e4m3 --out f32 --op-b t --shape 200x300x2048 \
          --tile 128 --splits $s --iters 1 --warmup 0 > "$OUT/sanitize-narrow-fp8-$s-$tool.log" 2>&1
        echo "compute-sanitizer $tool gemm e4m3 narrow splits $s: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-narrow-fp8-$s-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      done
    done ;;
  sanitize-tile-*)
    # sanitize-tile-TILE (64x128, 192, ...: `gemm --tile`): that tile, k split
    # and not, 16-bit and FP8, under all four tools.
    t=${section#sanitize-tile-}
    for tool in memcheck racecheck synccheck initcheck; do
      for s in 1 3; do
        compute-sanitizer --tool $tool --error-exitcode 9 $D/gemm --precision bf16 --out bf16 --shape 200x300x2000,67x130x777 \
          --tile $t --splits $s --beta 1 --bias --act gelu --iters 1 --warmup 0 > "$OUT/sanitize-$t-$s-$tool.log" 2>&1
        echo "compute-sanitizer $tool gemm tile $t splits $s: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$t-$s-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
        compute-sanitizer --tool $tool --error-exitcode 9 $D/gemm --precision e4m3 --out bf16 --op-b t --shape 200x300x2048,16x520x1024 \
          --tile $t --splits $s --iters 1 --warmup 0 > "$OUT/sanitize-$t-fp8-$s-$tool.log" 2>&1
        echo "compute-sanitizer $tool gemm e4m3 tile $t splits $s: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-$t-fp8-$s-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      done
    done ;;
  peer-kernels)
    # Which kernels (names, grids, durations) cuBLAS and cuBLASLt launch
    # for the shapes in PEER_SHAPES, beside ours: ncu's launch list.
    for p in bf16 e4m3; do
      ncu --clock-control none --section SpeedOfLight --section LaunchStats --launch-count ${PEER_LAUNCHES:-30} $D/gemm --precision $p --out bf16 \
        $([ $p = e4m3 ] && echo --op-b t) --shape ${PEER_SHAPES:-5000x3000x2000} --iters 1 --warmup 0 > "$OUT/peer-kernels-$p.log" 2>&1
      grep -E "CC 9\.0|Duration|Grid Size" "$OUT/peer-kernels-$p.log" | tee -a "$LOG"
    done ;;
  sweep-*)
    # sweep-PRECISION or sweep-PRECISION-OUT
    spec=${section#sweep-}; p=${spec%%-*}; out=f32
    [ "$spec" != "$p" ] && out=${spec#*-}
    echo "=== gemm sweep $p -> $out" | tee -a "$LOG"
    $D/gemm --precision $p --out $out --sweep --iters 20 --warmup 5 > "$OUT/sweep-$spec.md" 2> "$OUT/sweep-$spec.err"
    echo "exit $?" >> "$OUT/sweep-$spec.md" ;;
  random-*)
    # random-PRECISION-OUT-SEED: RANDOM_N (default 40) shapes drawn from
    # SEED ("fresh": a new seed, which the table's first line prints).
    spec=${section#random-}; p=${spec%%-*}; rest=${spec#*-}; out=${rest%%-*}; seed=${rest#*-}
    echo "=== gemm random $p -> $out, seed $seed" | tee -a "$LOG"
    $D/gemm --precision $p --out $out --random ${RANDOM_N:-40} $([ "$seed" != fresh ] && echo --seed $seed) \
      --iters ${RANDOM_ITERS:-20} --warmup 5 > "$OUT/random-$spec.md" 2> "$OUT/random-$spec.err"
    echo "exit $?" >> "$OUT/random-$spec.md" ;;
  ncu)
    # The library kernel with plain f32 sums against the same with the
    # epilogue fused into its store (bf16 out), 4096^3.
    M=gpu__time_duration.sum,sm__inst_executed.sum,launch__registers_per_thread,smsp__warp_issue_stalled_no_instruction_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum
    for out in f32 bf16; do
      ncu --clock-control none --csv -k regex:gemm_wgmma --metrics $M $D/gemm --precision bf16 --out $out --shape 4096x4096x4096 --iters 1 --warmup 0 > "$OUT/ncu-$out.csv" 2> "$OUT/ncu-$out.err"
      echo "ncu $out:"; grep gemm_wgmma "$OUT/ncu-$out.csv" | awk -F'","' '{print $5, $(NF-2), $NF}' | tail -8
    done | tee -a "$LOG" ;;
  startup)
    # The first call in a fresh process on a fresh machine: each kernel is
    # JIT-compiled from its own PTX module on first use (the driver's cache
    # keeps it for later processes).
    echo "=== startup: first and second call of one bf16 shape" | tee -a "$LOG"
    for i in 1 2; do
      s=$(date +%s%N); $D/gemm --precision bf16 --out bf16 --shape 1000x1000x1000 --iters 3 --warmup 1 > "$OUT/startup-$i.log" 2>&1; rc=$?
      echo "call $i: exit $rc, $(( ($(date +%s%N) - s) / 1000000 )) ms" | tee -a "$LOG"
    done ;;
  ncu-shapes)
    # Where the small and skinny shapes lose: every kernel of one call
    # (ours, the split-k epilogue pass, the packs, and cuBLAS's), its
    # duration, grid, and SM and DRAM throughput.
    M=gpu__time_duration.sum,launch__grid_size,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
    for shape in 128x8192x8192 8192x128x8192 64x14336x4096 5000x3000x2000 1000x1000x1000; do
      ncu --clock-control none --csv --metrics $M $D/gemm --precision bf16 --out bf16 --shape $shape --iters 1 --warmup 0 > "$OUT/ncu-$shape.csv" 2> "$OUT/ncu-$shape.err"
      echo "ncu $shape:"; python3 scripts/ncu-table.py "$OUT/ncu-$shape.csv"
    done | tee -a "$LOG" ;;
  ncu-small)
    # Where the small-m and skinny calls lose, ours against the peer's
    # kernels in the same process: each launch's time, grid, registers,
    # DRAM bytes and throughput. NCU_CASES: "precision shape splits" items.
    M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum
    cases=${NCU_CASES:-"e4m3 16x4096x4096 1;e4m3 16x4096x4096 4;bf16 16x4096x4096 4;e4m3 8192x128x8192 1;e4m3 128x8192x8192 1;bf16 8192x128x8192 2;e4m3 5000x3000x2000 1"}
    IFS=';' read -ra items <<< "$cases"
    for item in "${items[@]}"; do
      read -r p shape s <<< "$item"
      f="$OUT/ncu-small-$p-$shape-$s"
      ncu --clock-control none --csv --metrics $M $D/gemm --precision $p --out bf16 $([ $p = e4m3 ] && echo --op-b t) --shape $shape --splits $s --iters 1 --warmup 0 > "$f.csv" 2> "$f.err"
      echo "ncu $p $shape splits $s:"; python3 scripts/ncu-table.py "$f.csv"
    done | tee -a "$LOG" ;;
  shapes-probe)
    # What makes 5000x3000x2000 slow (alignment of its strides, its tails,
    # its tile count) and what a small call's fixed cost is (k-splits).
    echo "=== probe: alignment and tails" | tee -a "$LOG"
    $D/gemm --precision bf16 --out bf16 --shape 5000x3000x2000,5120x3072x2048,5000x3072x2048,5120x3000x2048,5120x3072x2000,5000x3000x2048,4992x3072x2048 --iters 20 2>&1 | grep '^| bf16' | tee -a "$LOG"
    echo "=== probe: small calls by k-splits" | tee -a "$LOG"
    for s in 1 2 4; do
      $D/gemm --precision bf16 --out f32 --shape 1000x1000x1000,1000x1000x64,1024x1024x1024,128x8192x8192 --splits $s --iters 20 2>&1 | grep '^| bf16' | tee -a "$LOG"
    done ;;
  splits-probe)
    # The in-kernel split-k fix-up's cost, to calibrate the dispatcher's
    # model (cpu/src/gemm/run.rs, FIXUP_*): each shape at forced splits, then
    # as the dispatcher chooses, bf16 and e4m3 with bf16 out.
    echo "=== probe: k-splits with the in-kernel fix-up" | tee -a "$LOG"
    for p in bf16 e4m3; do
      shapes=128x8192x8192,8192x128x8192,1000x1000x1000,64x14336x4096,16x4096x4096,1024x1024x8192,5000x3000x2000
      for s in 1 2 3 4 8 auto; do
        $D/gemm --precision $p --out bf16 --shape $shapes $([ $s = auto ] || echo --splits $s) --iters 20 2>&1 | grep "^| $p" | sed "s/^/splits $s /" | tee -a "$LOG"
      done
    done ;;
  tile-probe)
    # 128 x 256, 128 x 128 and 64 x 128 tiles at forced splits, to calibrate
    # the dispatcher's model (cpu/src/gemm/plan.rs, NARROW_STEP, SHORT_STEP): the shapes where
    # wide tiles are too few or half empty, and two where they fill the
    # SMs; then as the dispatcher chooses. bf16 and e4m3, bf16 out.
    echo "=== probe: tile width and k-splits" | tee -a "$LOG"
    for p in bf16 e4m3; do
      shapes=${PROBE_SHAPES:-128x8192x8192,8192x128x8192,1000x1000x1000,1024x1024x1024,512x512x512,64x14336x4096,16x4096x4096,2048x2048x2048,4096x4096x4096}
      for t in ${PROBE_TILES:-256 128 64x128}; do for s in ${PROBE_SPLITS:-1 2 4}; do
        $D/gemm --precision $p --out bf16 $([ $p = e4m3 ] && echo --op-b t) --shape $shapes --tile $t --splits $s --iters 20 2>&1 | grep "^| $p" | sed "s/^/tile $t splits $s /" | tee -a "$LOG"
      done; done
      $D/gemm --precision $p --out bf16 $([ $p = e4m3 ] && echo --op-b t) --shape $shapes --iters 20 2>&1 | grep "^| $p" | sed "s/^/auto /" | tee -a "$LOG"
    done ;;
  ab)
    # Two builds on one machine, alternating (gemm-old: an earlier
    # revision's binary, copied into .device by hand): the large squares,
    # where a few percent between sessions can be the machine.
    echo "=== A/B: $(cat $D/git-rev-old 2>/dev/null) (old) against $(cat $D/git-rev) (new)" | tee -a "$LOG"
    for round in 1 2; do
      for bin in gemm-old gemm; do
        $D/$bin --precision bf16 --out bf16 --shape 4096x4096x4096,8192x8192x8192,2048x8192x2048 --iters 30 2>&1 | grep '^| bf16' | sed "s/^/$bin /" | tee -a "$LOG"
        $D/$bin --precision e4m3 --out bf16 --op-b t --shape 4096x4096x4096,8192x8192x8192 --iters 30 2>&1 | grep '^| e4m3' | sed "s/^/$bin /" | tee -a "$LOG"
      done
    done ;;
  ab-small)
    # Two builds on one machine, alternating (gemm-old, as for ab): the
    # calls of tens of microseconds, where the host's part of a call shows.
    echo "=== A/B small calls: $(cat $D/git-rev-old 2>/dev/null) (old) against $(cat $D/git-rev) (new)" | tee -a "$LOG"
    for round in 1 2 3; do
      for bin in gemm-old gemm; do
        $D/$bin --precision bf16 --out bf16 --shape 512x512x512,1024x1024x1024,1000x1000x1000,16x4096x4096 --iters 50 2>&1 | grep '^| bf16' | sed "s/^/$bin /" | tee -a "$LOG"
        $D/$bin --precision e4m3 --out bf16 --op-b t --shape 512x512x512,1024x1024x1024,1000x1000x1000,16x4096x4096 --iters 50 2>&1 | grep '^| e4m3' | sed "s/^/$bin /" | tee -a "$LOG"
      done
    done ;;
  ab-attention)
    # Two builds of the attention steps on one machine, alternating
    # (attention-old: an earlier revision's binary, copied into .device by
    # hand): bf16, the issue's d = 128 shapes and one each of d = 64, 256,
    # or AB_ATTENTION_SHAPES ("batch heads seq d [flags]" items, ';'
    # apart), of AB_ATTENTION_KERNELS (flash,hopper), AB_ROUNDS rounds (2).
    echo "=== A/B attention: $(cat $D/git-rev-old 2>/dev/null) (old) against $(cat $D/git-rev) (new)" | tee -a "$LOG"
    IFS=';' read -ra shapes <<< "${AB_ATTENTION_SHAPES:-4 16 4096 128;4 16 4096 128 --causal;2 16 8192 128;8 16 2048 64;4 8 4096 256}"
    for round in $(seq ${AB_ROUNDS:-2}); do
      for bin in attention-old attention; do
        for shape in "${shapes[@]}"; do
          read -r b h sq d extra <<< "$shape"
          $D/$bin --precision bf16 --batch $b --heads $h --seq $sq --head-dim $d $extra --kernels ${AB_ATTENTION_KERNELS:-flash,hopper} \
            --iters 20 --warmup 5 2>&1 | grep '^| bf16' | sed "s/^/$bin /" | tee -a "$LOG"
        done
      done
    done ;;
  fixed-probe)
    # The small calls' fixed time: every kernel of each call (ours and the
    # peer's, three timed launches after the verification's) under ncu,
    # with caches flushed before each launch and left warm; then where our
    # warps wait, by instruction (ncu-source, sass-stalls.py).
    # FIXED_CASES: "precision shape splits" items (splits "-": the plan's).
    M=gpu__time_duration.sum,launch__grid_size,sm__cycles_active.max,smsp__inst_executed.sum
    cases=${FIXED_CASES:-"e4m3 64x128x128 -;bf16 64x128x128 -;e4m3 16x4096x4096 -;bf16 1024x1024x1024 -;e4m3 1024x1024x1024 -"}
    IFS=';' read -ra items <<< "$cases"
    for item in "${items[@]}"; do
      read -r p shape s <<< "$item"
      for cache in all none; do
        f="$OUT/fixed-$p-$shape-$cache"
        ncu --cache-control $cache --clock-control none --csv --metrics $M $D/gemm --precision $p --out bf16 $([ $p = e4m3 ] && echo --op-b t) \
          --shape $shape $([ "$s" = - ] || echo --splits $s) --iters 3 --warmup 0 > "$f.csv" 2> "$f.err"
        echo "fixed $p $shape splits $s, caches $cache:"; python3 scripts/ncu-table.py "$f.csv"
      done
    done | tee -a "$LOG"
    for item in "${items[@]}"; do
      read -r p shape s <<< "$item"
      NCU_TAG=$p-$shape NCU_PRECISION=$p NCU_SHAPE=$shape NCU_SPLITS=$([ "$s" = - ] || echo $s) KEEP_LOG=1 bash "$0" ncu-source > /dev/null
      echo "=== stalls $p $shape splits $s" | tee -a "$LOG"
      python3 scripts/sass-stalls.py "$OUT/sass-$p-$shape.csv" 30 2>&1 | tee "$OUT/stalls-$p-$shape.txt" | tee -a "$LOG"
    done ;;
  ncu-detail)
    # ncu's sections (speed of light, memory workload, scheduler, warp
    # states) for every kernel of one call, caches left warm between
    # launches as in a timed loop (the second launch of each is the warm
    # one). NCU_PRECISION, NCU_SHAPE, NCU_SPLITS as for ncu-source.
    shape=${NCU_SHAPE:-16x4096x4096}; p=${NCU_PRECISION:-e4m3}
    ncu --cache-control none --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
      --section WarpStateStats --section LaunchStats --section Occupancy \
      $D/gemm --precision $p --out bf16 $([ $p = e4m3 ] && echo --op-b t) --shape $shape ${NCU_SPLITS:+--splits $NCU_SPLITS} --iters 2 --warmup 0 \
      > "$OUT/detail-$p-$shape${NCU_SPLITS:+-s$NCU_SPLITS}.txt" 2>&1
    echo "ncu-detail $p $shape: $(grep -c '^  [a-z_]*gemm\|^  nvjet' "$OUT/detail-$p-$shape${NCU_SPLITS:+-s$NCU_SPLITS}.txt") launches" | tee -a "$LOG" ;;
  fixed-parts)
    # A call's fixed time, part by part (our kernel's third launch under
    # ncu, caches warm): one block over 1, 8 and 32 k-steps; the store
    # from registers (an odd ldc) and with C read (beta 1); the split
    # fix-up alone (4 blocks) and over the SMs; 16 x 4096 x 4096 by
    # splits; the copy engine's zero fill (m from 1 to 64 rows of a short
    # tile).
    E="--precision e4m3 --out bf16 --op-b t --tile 64x128"
    {
      for k in 128 1024 4096; do warm_ncu gemm $E --shape 64x128x$k; done
      warm_ncu gemm $E --shape 64x128x128 --ldc 129
      warm_ncu gemm $E --shape 64x128x128 --beta 1
      warm_ncu gemm $E --shape 16x128x4096 --splits 4
      for s in 1 2 4 8; do warm_ncu gemm $E --shape 16x4096x4096 --splits $s; done
      for m in 1 16 32 48 64; do warm_ncu gemm $E --splits 4 --shape ${m}x4096x4096; done
    } | tee -a "$LOG" ;;
  fixed-src)
    # Where a one-block call's warps wait (warm, a sample every 32 cycles),
    # staged store, register store, beta 1, and the split fix-up.
    for c in "staged 64x128x128" "ldc 64x128x128 --ldc 129" "beta 64x128x128 --beta 1" "split 16x128x4096 --splits 4"; do
      read -r tag shape args <<< "$c"
      NCU_TAG=fixed-$tag NCU_PRECISION=e4m3 NCU_SHAPE=$shape NCU_ARGS="--tile 64x128 $args" NCU_WARM=1 NCU_INTERVAL=0 KEEP_LOG=1 \
        bash "$0" ncu-source > /dev/null
      echo "=== $tag: $shape $args" | tee -a "$LOG"; python3 scripts/sass-stalls.py "$OUT/sass-fixed-$tag.csv" 12 | tee -a "$LOG"
    done ;;
  ab-split)
    # Split-k calls, two builds alternating (gemm-old, as for ab): each
    # kernel's third launch under ncu, then the batched timing against the
    # peer. SPLIT_CASES: "precision shape splits tile" items.
    cases=${SPLIT_CASES:-"e4m3 16x4096x4096 4 64x128;bf16 16x4096x4096 3 64x128;bf16 1024x1024x8192 2 128;bf16 128x8192x8192 2 128;e4m3 32x4096x4096 4 64x128"}
    IFS=';' read -ra items <<< "$cases"
    {
      for round in 1 2; do for bin in gemm-old gemm; do for item in "${items[@]}"; do
        read -r p sh s tile <<< "$item"
        warm_ncu $bin --precision $p --out bf16 $([ $p = e4m3 ] && echo --op-b t) --shape $sh --splits $s --tile $tile
      done; done; done
      for round in 1 2 3; do for bin in gemm-old gemm; do for item in "${items[@]}"; do
        read -r p sh s tile <<< "$item"
        $D/$bin --precision $p --out bf16 $([ $p = e4m3 ] && echo --op-b t) --shape $sh --splits $s --tile $tile --iters 50 2>&1 | grep "^| $p" | sed "s/^/$bin /"
      done; done; done
    } | tee -a "$LOG" ;;
  ab-dependent)
    # The product kernel launched dependent (overlapping the pack ahead of
    # it, or the call before) against serial launches (--serial-launches),
    # three rounds alternating, in one binary: calls with packs (B off 32
    # bytes, odd k, odd everything, a padded D) and in-place ones.
    {
      for round in 1 2 3; do for mode in dependent serial; do
        flag=$([ $mode = serial ] && echo --serial-launches)
        $D/gemm --precision bf16 --out bf16 --shape 5000x3000x2000,4095x4095x4095,4096x4096x4095,4096x4096x4096,1024x1024x1024,16x4096x4096 \
          $flag --iters 30 2>&1 | grep "^| bf16" | sed "s/^/$mode /"
        $D/gemm --precision e4m3 --out bf16 --op-b t --shape 5000x3000x2000,4096x4096x4095,1000x1000x1000,4096x4096x4096,1024x1024x1024,16x4096x4096 \
          $flag --iters 30 2>&1 | grep "^| e4m3" | sed "s/^/$mode /"
      done; done
    } | tee -a "$LOG" ;;
  small-tiles)
    # 128 x 128 against 64 x 128 tiles (twice the blocks) on small calls,
    # every precision, three rounds alternating; then one dimension at a
    # time (why 1000^3 differs), bf16 and tf32.
    S=512x512x512,1000x1000x1000,1024x1024x1024,1536x1536x1536,1024x1024x8192
    W=1024x1024x1024,1000x1024x1024,1024x1000x1024,1024x1024x1000,1000x1000x1000,960x960x960,1008x1008x1008,768x768x768,1280x1024x1024
    {
      for round in 1 2 3; do for tile in 128 64x128; do for p in bf16 f16 tf32 e4m3; do
        $D/gemm --precision $p --out bf16 $([ $p = e4m3 ] || [ $p = tf32 ] && echo --op-b t) --shape $S --tile $tile --iters 50 2>&1 | grep "^| $p" | sed "s/^/tile $tile /"
      done; done; done
      for round in 1 2; do for tile in 128 64x128; do for p in bf16 tf32; do
        $D/gemm --precision $p --out bf16 $([ $p = tf32 ] && echo --op-b t) --shape $W --tile $tile --iters 50 2>&1 | grep "^| $p" | sed "s/^/tile $tile /"
      done; done; done
    } | tee -a "$LOG" ;;
  ncu-source)
    # Per-instruction stall samples of the library kernel at one shape
    # (NCU_PRECISION, NCU_SHAPE, NCU_SPLITS; NCU_ARGS: more of gemm's
    # arguments), SASS with the samples as CSV, named by NCU_TAG (default
    # the shape).
    shape=${NCU_SHAPE:-5000x3000x2000}; tag=${NCU_TAG:-$shape}
    # NCU_WARM=1: the third launch, caches left warm (as in a timed loop);
    # NCU_INTERVAL: the warp sampling interval (0: every 32 cycles).
    warm=${NCU_WARM:+--cache-control none --launch-skip 2}
    ncu --clock-control none ${NCU_INTERVAL:+--warp-sampling-interval $NCU_INTERVAL} $warm --section SourceCounters --section WarpStateStats \
      --import-source no -k regex:gemm_wgmma --launch-count 1 \
      -f -o "$OUT/src-$tag" $D/gemm --precision ${NCU_PRECISION:-bf16} --out bf16 $([ "${NCU_PRECISION:-bf16}" = e4m3 ] && echo --op-b t) --shape $shape ${NCU_SPLITS:+--splits $NCU_SPLITS} ${NCU_ARGS:-} --iters $([ -n "${NCU_WARM:-}" ] && echo 3 || echo 1) --warmup 0 > "$OUT/src-$tag.log" 2>&1
    ncu -i "$OUT/src-$tag.ncu-rep" --page source --csv --print-source sass > "$OUT/sass-$tag.csv" 2>/dev/null
    ncu -i "$OUT/src-$tag.ncu-rep" --page details > "$OUT/details-$tag.txt" 2>/dev/null
    echo "ncu-source $tag: $(wc -l < "$OUT/sass-$tag.csv") SASS lines" | tee -a "$LOG" ;;
  align-probe)
    # Which misaligned rows cost: B (packed now when off 32 bytes) or D.
    echo "=== probe: D rows off 32 bytes" | tee -a "$LOG"
    $D/gemm --precision bf16 --out bf16 --shape 5120x3000x2048,5120x3072x2048 --iters 20 2>&1 | grep '^| bf16' | tee -a "$LOG"
    $D/gemm --precision bf16 --out bf16 --shape 5120x3000x2048 --ldc 3072 --iters 20 2>&1 | grep '^| bf16' | tee -a "$LOG"
    $D/gemm --precision bf16 --out bf16 --shape 5120x3000x2048 --ldb 3072 --iters 20 2>&1 | grep '^| bf16' | tee -a "$LOG" ;;
  fp8-align-probe)
    # e4m3 5000 x 3000 x 2000 (rows of 2000 bytes: on 16, off 32): both
    # operands repacked (default), each or both read in place off 32, and
    # both in place on 32 (--lda/--ldb 2016): what the repacks cost and
    # what misaligned rows cost the copy engine. Then every kernel of the
    # call and of cuBLASLt's under ncu (time, DRAM and L2 traffic).
    echo "=== probe: FP8 rows off 32 bytes" | tee -a "$LOG"
    NEVER=1000000000000
    S="--precision e4m3 --out bf16 --op-b t --shape 5000x3000x2000 --iters 50"
    for round in 1 2; do
      $D/gemm $S 2>&1 | grep '^| e4m3' | sed 's/^/repacked        /' | tee -a "$LOG"
      $D/gemm $S --pad-from $NEVER 2>&1 | grep '^| e4m3' | sed 's/^/both off 32     /' | tee -a "$LOG"
      $D/gemm $S --pad-from $NEVER --lda 2016 2>&1 | grep '^| e4m3' | sed 's/^/B off 32        /' | tee -a "$LOG"
      $D/gemm $S --pad-from $NEVER --ldb 2016 2>&1 | grep '^| e4m3' | sed 's/^/A off 32        /' | tee -a "$LOG"
      $D/gemm $S --lda 2016 --ldb 2016 2>&1 | grep '^| e4m3' | sed 's/^/both on 32      /' | tee -a "$LOG"
    done
    M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,launch__grid_size,launch__block_size
    # bf16, A's rows (4016 bytes) off 32, B's on 32: packed or in place.
    for round in 1 2; do
      $D/gemm --precision bf16 --out bf16 --shape 5000x3000x2008 --ldb 3008 --iters 50 2>&1 | grep '^| bf16' | sed 's/^/bf16 repacked   /' | tee -a "$LOG"
      $D/gemm --precision bf16 --out bf16 --shape 5000x3000x2008 --ldb 3008 --pad-from $NEVER --iters 50 2>&1 | grep '^| bf16' | sed 's/^/bf16 A off 32   /' | tee -a "$LOG"
    done
    # Every kernel's time, ours and cuBLASLt's, at the e4m3 shapes furthest
    # from the peer.
    i=0
    for v in "--pad-from $NEVER --ldb 2016" "" "--lda 2016 --ldb 2016"; do
      i=$((i + 1))
      ncu --clock-control none --csv --metrics $M $D/gemm --precision e4m3 --out bf16 --op-b t --shape 5000x3000x2000 $v --iters 1 --warmup 0 > "$OUT/ncu-align-$i.csv" 2> "$OUT/ncu-align-$i.err"
      echo "ncu [$v]:" | tee -a "$LOG"
      grep gpu__time_duration "$OUT/ncu-align-$i.csv" | awk -F'","' '{print $5 " | " $NF}' | sed 's/(.*)//' | tail -8 | tee -a "$LOG"
    done
    for shape in 16x4096x4096 1024x1024x1024; do
      ncu --clock-control none --csv --metrics $M $D/gemm --precision e4m3 --out bf16 --op-b t --shape $shape --iters 1 --warmup 0 > "$OUT/ncu-$shape.csv" 2> "$OUT/ncu-$shape.err"
      echo "ncu $shape:" | tee -a "$LOG"
      grep -E 'gpu__time_duration|launch__grid_size' "$OUT/ncu-$shape.csv" | awk -F'","' '{print $5 " | " $(NF-2) " | " $NF}' | sed 's/(.*)//' | tail -8 | tee -a "$LOG"
    done ;;
  ab-align)
    # Two builds alternating (gemm-old beside gemm): A's rows off 32 bytes
    # repacked (old) or read in place (new), FP8 and bf16.
    echo "=== A/B: $(cat $D/git-rev-old 2>/dev/null) (old) against $(cat $D/git-rev) (new)" | tee -a "$LOG"
    for round in 1 2 3; do
      for bin in gemm-old gemm; do
        $D/$bin --precision e4m3 --out bf16 --op-b t --shape 5000x3000x2000,4096x4096x2000 --iters 50 2>&1 | grep '^| e4m3' | sed "s/^/$bin /" | tee -a "$LOG"
        $D/$bin --precision bf16 --out bf16 --shape 5000x3000x2008,8192x4096x1000 --iters 50 2>&1 | grep '^| bf16' | sed "s/^/$bin /" | tee -a "$LOG"
      done
    done ;;
  ncu-fp8)
    # Where FP8 loses to cuBLASLt: the library kernel in bf16 and e4m3 at
    # 8192^3 (f32 out), time, issue stalls and throughput side by side.
    M=gpu__time_duration.sum,sm__inst_executed.sum,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__warp_issue_stalled_no_instruction_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct
    for p in bf16 e4m3; do
      ncu --clock-control none --csv -k regex:gemm_wgmma --metrics $M $D/gemm --precision $p --out f32 --shape 8192x8192x8192 --op-b $([ $p = e4m3 ] && echo t || echo n) --iters 1 --warmup 0 > "$OUT/ncu-$p.csv" 2> "$OUT/ncu-$p.err"
      echo "ncu $p:"; grep gemm_wgmma "$OUT/ncu-$p.csv" | awk -F'","' '{print $5, $(NF-2), $NF}' | tail -9
    done | tee -a "$LOG" ;;
  ncu-square)
    # Where bf16 8192^3 trails cuBLAS: every kernel launch of one call (ours
    # and cuBLAS's, the later ones warm), each one's time, SM clock, tensor
    # pipe's share of the elapsed cycles, and L2 and DRAM bytes.
    T=$(ncu --query-metrics 2>/dev/null | grep -o '^sm__pipe_tensor_op_gmma_cycles_active' | head -1)
    M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__registers_per_thread,lts__t_bytes.sum,dram__bytes_read.sum${T:+,$T.avg.pct_of_peak_sustained_elapsed}
    for out in bf16 f32; do
      ncu --clock-control none --csv -k regex:'gemm_wgmma|nvjet|xmma|cutlass' --launch-count ${NCU_LAUNCHES:-14} --metrics $M $D/gemm --precision bf16 --out $out --shape 8192x8192x8192 --iters 3 --warmup 1 > "$OUT/ncu-square-$out.csv" 2> "$OUT/ncu-square-$out.err"
      echo "ncu bf16 -> $out 8192^3:"; python3 scripts/ncu-table.py "$OUT/ncu-square-$out.csv"
    done | tee -a "$LOG" ;;
  attention)
    # The attention family (issue 28): ours verified then timed on the
    # sweep (the issue's table, odd lengths, GQA) in bf16 and f16, every
    # step; torch's SDPA FLASH and CUDNN backends on the same shapes, in
    # the same device call (sanitize-attention: compute-sanitizer).
    echo "=== attention sweep" | tee -a "$LOG"
    for p in bf16 f16; do
      $D/attention --precision $p --sweep ${ATTENTION_KERNELS:+--kernels $ATTENTION_KERNELS} --iters 20 --warmup 5 \
        > "$OUT/attention-sweep-$p.md" 2> "$OUT/attention-sweep-$p.err"
      echo "attention sweep $p: exit $?" | tee -a "$LOG"
    done
    for p in bf16 f16; do
      python3 scripts/torch-sdpa.py --dtype $p > "$OUT/torch-sdpa-$p.md" 2> "$OUT/torch-sdpa-$p.err"; echo "torch-sdpa $p exit $?" | tee -a "$LOG"
    done
    cat "$OUT"/attention-sweep-*.md "$OUT"/torch-sdpa-*.md | tee -a "$LOG" ;;
  sanitize-attention)
    # compute-sanitizer's four tools on small attention calls: causal GQA,
    # several key tiles, the turns, d = 256, tiles of 20 queries (the
    # second consumer's rows all past s_q) over many key tiles, grouped
    # causal heads, and the split last round.
    for tool in memcheck racecheck synccheck initcheck; do
      compute-sanitizer --tool $tool --error-exitcode 9 $D/attention --batch 2 --heads 4 --kv-heads 2 --seq 77 --seq-k 130 \
        --head-dim 64 --causal ${ATTENTION_KERNELS:+--kernels $ATTENTION_KERNELS} --iters 1 --warmup 0 > "$OUT/sanitize-attention-$tool.log" 2>&1
      echo "compute-sanitizer $tool attention: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-attention-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      # d = 128 over several key tiles (the pinned wait), with the turns.
      compute-sanitizer --tool $tool --error-exitcode 9 $D/attention --batch 1 --heads 4 --kv-heads 2 --seq 300 --seq-k 333 \
        --head-dim 128 --causal --ping-pong --kernels flash,hopper --iters 1 --warmup 0 > "$OUT/sanitize-attention-128-$tool.log" 2>&1
      echo "compute-sanitizer $tool attention d128 ping-pong: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-attention-128-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      # d = 256 over several key tiles (the voted rescale).
      compute-sanitizer --tool $tool --error-exitcode 9 $D/attention --batch 1 --heads 2 --seq 150 --seq-k 333 \
        --head-dim 256 --kernels hopper --iters 1 --warmup 0 > "$OUT/sanitize-attention-256-$tool.log" 2>&1
      echo "compute-sanitizer $tool attention d256: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-attention-256-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      # 20 queries a tile, eleven key tiles, GQA.
      compute-sanitizer --tool $tool --error-exitcode 9 $D/attention --batch 2 --heads 4 --kv-heads 2 --seq 20 --seq-k 1400 \
        --head-dim 64 --kernels hopper --iters 1 --warmup 0 > "$OUT/sanitize-attention-short-$tool.log" 2>&1
      echo "compute-sanitizer $tool attention 20 queries: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-attention-short-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      # Causal tiles dealt in groups of heads (32 of 64 on 132 SMs).
      compute-sanitizer --tool $tool --error-exitcode 9 $D/attention --batch 4 --heads 16 --kv-heads 8 --seq 2048 \
        --head-dim 64 --causal --kernels hopper --iters 1 --warmup 0 > "$OUT/sanitize-attention-grouped-$tool.log" 2>&1
      echo "compute-sanitizer $tool attention grouped: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-attention-grouped-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      # The last round split over every block (8 tiles of 64 key tiles on
      # 132 SMs: chunks of 3 or 4, merged by attention_merge), d = 128
      # and 256.
      for d in 128 256; do
        compute-sanitizer --tool $tool --error-exitcode 9 $D/attention --batch 1 --heads 4 --seq 256 --seq-k $((64 * $(test $d = 256 && echo 64 || echo 128))) \
          --head-dim $d --kernels hopper --iters 1 --warmup 0 > "$OUT/sanitize-attention-split$d-$tool.log" 2>&1
        echo "compute-sanitizer $tool attention split d$d: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize-attention-split$d-$tool.log" | tr '\n' ' ')" | tee -a "$LOG"
      done
    done ;;
  ncu-attention)
    # Where the attention steps' time goes at d = 128 (ATTENTION_NCU_KERNELS,
    # default flash and hopper; ATTENTION_NCU_ARGS, default b4 h16 s4096,
    # non-causal): speed of light, pipes, warp states, occupancy, and the
    # SASS lines' stall samples (summed by instruction: sass-stalls.py).
    for k in ${ATTENTION_NCU_KERNELS:-flash hopper}; do
      ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters \
        --import-source no -k regex:attention_$k --launch-count 1 -o "$OUT/ncu-attention-$k" \
        $D/attention ${ATTENTION_NCU_ARGS:---batch 4 --heads 16 --seq 4096 --head-dim 128} --kernels $k --iters 1 --warmup 0 > "$OUT/ncu-attention-$k.log" 2>&1
      ncu -i "$OUT/ncu-attention-$k.ncu-rep" --page details > "$OUT/ncu-attention-$k.txt" 2>&1
      ncu -i "$OUT/ncu-attention-$k.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu-attention-$k-sass.csv" 2>/dev/null
      echo "ncu-attention $k: $(grep -E 'Duration|Compute \(SM\) Throughput' "$OUT/ncu-attention-$k.txt" | tr -s ' ' | tr '\n' ';')" | tee -a "$LOG"
      python3 scripts/sass-stalls.py "$OUT/ncu-attention-$k-sass.csv" 30 2>&1 | tee "$OUT/stalls-attention-$k.txt" | tee -a "$LOG"
    done ;;
  tensor)
    echo "=== tensor family (the ladder after the hopper.rs generalization)" | tee -a "$LOG"
    $D/kernel-lab --only tensor --sizes 4096,8192 --quiet > "$OUT/tensor.txt" 2>&1; echo "exit $?" >> "$OUT/tensor.txt" ;;
  esac
done
