# Sourced at the top of a results/experiments/*/run.sh on the GPU machine,
# with NAME set (the run's name): CUDA on the path; each binary of
# BINARIES (default: attention) unpacked from .device/<binary>.tgz into
# .device/bin, the git revision they were built at exported (the results
# name it); $OUT, $TMPD (/tmp/$NAME, for what does not come back) and
# $LOG ($OUT/$NAME.log, emptied) made. Package the binaries here first
# (carry .device), e.g. for attention:
#   cargo build --release && mkdir -p .device/pkg && cp target/release/attention .device/pkg/ &&
#   strip .device/pkg/attention && git rev-parse --short=12 HEAD > .device/pkg/git-rev &&
#   (cd .device && tar czf attention.tgz -C pkg attention git-rev) && rm -rf .device/pkg
D=.device
OUT=${OUT:-/tmp/out}
TMPD=/tmp/$NAME
mkdir -p "$OUT" "$D/bin" "$TMPD"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for binary in ${BINARIES:-attention}; do
  # .tgz or .txz (xz packs a binary a quarter smaller: carry is 64 MiB).
  tar xf "$(ls "$D/$binary".t?z | head -1)" -C "$D/bin"
done
export KERNEL_LAB_GIT_REV=$(cat $D/bin/git-rev)
LOG=$OUT/$NAME.log
: > "$LOG"
