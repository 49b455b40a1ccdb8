#!/usr/bin/env bash
# Device-side lab (session 32, written without a device): builds bwd16lab.cu for a few table
# sizes and rings (CONFIGS: "TB_KB:STAGES:TILE_KB ...") and runs each (ARGS: log2 n, rounds).
# Nothing to carry but the tree. Each run is capped at 90 s (a wrong barrier would hang).
set -u
export PATH=/usr/local/cuda/bin:$PATH
for c in ${CONFIGS:-176:3:8 144:5:8 144:2:16 64:4:16}; do
  IFS=: read -r tb st tk <<<"$c"
  bin=/tmp/bwd16lab-$tb-$st-$tk
  nvcc -O3 -arch=sm_90a -DTB_KB=$tb -DSTAGES=$st -DTILE_KB=$tk -o $bin "$(dirname "$0")/bwd16lab.cu" || continue
  timeout 90 $bin ${ARGS:-28 5}
  echo "rc=$?"
done
