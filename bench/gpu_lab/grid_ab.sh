#!/bin/bash
# Device-side lab (session 12): persistent grid (default) against larger grids
# (PWPA_CUDA_GRID=k caps the grid at k x the resident blocks; 100000 = one block or warp
# group per tile), alone and with tile tickets per block (PWPA_CUDA_WSUB=0), on
#   - torch_bench's f32 rows of the catalogue (randn x 4, .gpu-tables), and
#   - `pwpa bench` random tables (uniform inputs over the range, then 10 % beyond).
# A variant is VAR=value[,VAR=value...] (VARIANTS space-separated; ROUNDS alternated rounds).
# .gpu and .gpu-tables carried; writes $OUT/grid-<variant>.md and prints a short table.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
VARIANTS=${VARIANTS:-"A=1 PWPA_CUDA_GRID=100000 PWPA_CUDA_GRID=4"}
FUNCS=${FUNCS:-hardswish,reciprocal,tanh,silu,sigmoid,gelu,exp,softplus}
SPECS=${SPECS:-"random:64:1:arbitrary random:256:3:uniform random:256:3:arbitrary random:1024:5:arbitrary"}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for round in $(seq 1 ${ROUNDS:-2}); do
  for v in $VARIANTS; do
    tag=$(echo "$v" | tr '=,' '__')
    e=$(echo "$v" | tr ',' ' ')
    env $e bash .gpu/torch_bench.sh --no-compile --dtypes f32 --functions "$FUNCS" --out "$OUT/grid-$tag-r$round" > /dev/null 2>&1
    echo "== round $round $v"
    grep -E "^\| [a-z_]+ \| f32" "$OUT/grid-$tag-r$round.md" | awk -F'|' '{printf "%s %s ", $2, $9} END {print ""}'
    for s in $SPECS; do
      out=$(env $e timeout 60 .gpu/pwpa bench $s --device cuda --dtype f32 --repeats 9 2>&1)
      r=$(echo "$out" | grep -E "^\| pwpa" | tail -1 | awk -F'|' '{print $(NF-2)}')
      printf "%s %s  " "$s" "$r"
    done
    echo
    echo "   (last: $(echo "$out" | grep -E '^pwpa:' | tail -1))"
  done
done
