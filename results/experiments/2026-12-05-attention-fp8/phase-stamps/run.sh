set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p $OUT .device/s
export PATH=/usr/local/cuda/bin:$PATH
tar xzf .device/attention-stamps.tgz -C .device/s
export KERNEL_LAB_GIT_REV=$(cat .device/s/git-rev)
export KL_STAMPS=1
.device/s/attention --precision e4m3 --batch 4 --heads 16 --seq 4096 --head-dim 128 --iters 10 --no-split > $OUT/stamps-d128.txt 2>&1
.device/s/attention --precision e4m3 --batch 4 --heads 16 --seq 4096 --head-dim 128 --iters 10 --no-split --ping-pong > $OUT/stamps-d128-pp.txt 2>&1
.device/s/attention --precision e4m3 --batch 4 --heads 8 --seq 4096 --head-dim 256 --iters 10 --no-split > $OUT/stamps-d256.txt 2>&1
grep "hopper |" $OUT/stamps-*.txt
grep "stamp n1" $OUT/stamps-d128.txt | head -12
