#!/usr/bin/env bash
# A/B of two builds (base/, new/) on one GPU, alternating per round.
set -u
cd "$(dirname "$0")"
for d in base new; do mkdir -p $d && tar xzf $d.tgz -C $d; done
export CUDA_CACHE_MAXSIZE=4294967296
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
G="8192x8192x8192,5000x3000x2000,3072x3072x4096,128x8192x8192,16x4096x4096,4095x4095x4095"
for r in 1 2 3; do
  for b in base new; do
    echo "### round $r $b"
    $b/gemm --precision bf16 --out bf16 --shape $G --iters 30 --warmup 5 2>&1 | grep '^| bf16' | sed "s/^/$b gemm-bf16 /"
    $b/gemm --precision bf16 --out f32 --shape 8192x8192x8192,2048x2048x2048 --beta 1 --bias --iters 30 2>&1 | grep '^| bf16' | sed "s/^/$b gemm-bf16-epi /"
    $b/gemm --precision e4m3 --out bf16 --op-b t --shape 8192x8192x8192,128x8192x8192 --iters 30 2>&1 | grep '^| e4m3' | sed "s/^/$b gemm-e4m3 /"
    $b/gemm --precision tf32 --out f32 --op-b t --shape 4096x4096x4096 --iters 30 2>&1 | grep '^| tf32' | sed "s/^/$b gemm-tf32 /"
    for a in "--head-dim 128 --seq 4096 --batch 4" "--head-dim 128 --seq 4096 --batch 4 --causal" "--head-dim 64 --seq 4096 --batch 4" "--head-dim 256 --seq 4096 --batch 4" "--head-dim 128 --seq 8192 --batch 1 --heads 32 --seq-k 8192"; do
      $b/attention $a --kernels hopper --iters 20 2>&1 | grep -E '^\| ' | grep -v -- '---' | grep -iv 'kernel |' | sed "s/^/$b attn $a /" | sed 's/--//g'
    done
  done
done
