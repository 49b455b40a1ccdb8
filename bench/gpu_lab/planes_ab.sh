#!/usr/bin/env bash
# Device-side lab for the record layout and lookup of f32 tables (issue 4), with .gpu
# carried and earlier CLI builds beside .gpu/pwpa. Each variant is NAME:BINARY[:UNROLL[:AFFINE]]
# (AFFINE 0 keeps anchors in the records: PWPA_CUDA_AFFINE=0), timed interleaved per table.
# Used on 2026-11-22 with
#   old:.gpu/pwpa-old        records [anchor, c0..cD] in float4 slots, odd stride (14f49c0)
#   greedy:.gpu/pwpa-greedy  plane layout, computed anchors, copies allocated in turn
#   model:.gpu/pwpa-model    copies chosen by the wavefront model
#   phased:.gpu/pwpa         arbitrary breakpoints: every piece found first (default)
# Prints one line per measurement: variant, table, the bench row (fraction of copy last
# but one), and the first kernel line a variant prints (older builds print none). PLANES_SPECS, PLANES_VARIANTS
# (space-separated) and PLANES_N choose what runs.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
N=${PLANES_N:-67108864}
row() { grep -E "^\| pwpa " | tail -1; }
VARIANTS=${PLANES_VARIANTS:-old:.gpu/pwpa-old model:.gpu/pwpa-model phased:.gpu/pwpa}
for spec in ${PLANES_SPECS:-random:256:3:uniform random:1024:3:uniform random:1024:5:uniform random:1024:8:uniform random:4096:5:uniform random:4096:8:uniform random:1024:3:arbitrary random:1024:5:arbitrary random:1024:8:arbitrary random:4096:5:arbitrary random:4096:8:arbitrary}; do
  first=1
  for v in $VARIANTS; do
    IFS=: read -r name bin unroll affine <<< "$v"
    printf '%-8s %-24s ' "$name${unroll:+/u$unroll}" $spec
    o=$(PWPA_CUDA_AFFINE=${affine:-1} timeout 40 $bin bench $spec --device cuda --dtype f32 -n $N --repeats 10 ${unroll:+--unroll $unroll} 2>&1)
    echo "$o" | row
    k=$(echo "$o" | grep -E "^pwpa: ")
    if [ $first = 1 ] && [ -n "$k" ]; then echo "         $k"; first=0; fi
  done
done
