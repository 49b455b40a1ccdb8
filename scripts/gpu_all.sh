#!/usr/bin/env bash
# Device side (copied to .gpu/all.sh by scripts/gpu_check.sh): the PyTorch GPU benchmark,
# then the GPU check (.gpu/run.sh: tests, sanitizers, bench, Python tests), short table
# last. Hands back at most 8 files. Extra arguments go to bench/torch_bench.py.
FINAL=${OUT:-/tmp/pwpa-all-out}
mkdir -p /tmp/tb
OUT=/tmp/tb TB_TIMEOUT=${TB_TIMEOUT:-200} bash .gpu/torch_bench.sh "$@" > /tmp/tb/torch.log 2>&1
tail -45 /tmp/tb/torch.log
OUT=$FINAL bash .gpu/run.sh
cp /tmp/tb/torch-cuda.csv /tmp/tb/torch-cuda.md "$FINAL/" 2>/dev/null
rm -f "$FINAL/gpu-study.svg" "$FINAL/bench-functions.log"
