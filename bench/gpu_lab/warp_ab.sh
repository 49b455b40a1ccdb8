#!/usr/bin/env bash
# Device-side lab (issue 4/5): tile tickets per warp instead of per block (no block barrier
# per tile) against earlier CLIs. With .gpu and .gpu-tables carried. First the GPU tests
# (all but the ignored big ones) and memcheck/racecheck in quick mode, then per table,
# interleaved, each variant of WARP_VARIANTS (NAME:BINARY[:VAR=VALUE], e.g.
# w2:.gpu/pwpa:PWPA_CUDA_WSUB=2); each prints the bench row (fraction of copy last but one).
# WARP_SPECS (f32 sweep tables), WARP_FUNCS (f32 catalogue tables on N(0, 16)), WARP_N.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
N=${WARP_N:-67108864}
if [ -z "${WARP_NO_TESTS:-}" ]; then
  echo "== tests (.gpu/test-gpu)"
  timeout 150 .gpu/test-gpu --test-threads=2 2>&1 | grep -E "^test |test result|panicked" | head -20
  for tool in memcheck racecheck; do
    PWPA_GPU_TEST_QUICK=1 timeout 100 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 .gpu/test-gpu --test-threads=1 \
      odd_sizes fused backward exp2_tail_shares 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|Invalid|hazard" | head -4
  done
fi
row() { grep -E "^\| pwpa " | tail -1; }
one() { # variant args...
  local name bin env; IFS=: read -r name bin env <<< "$1"; shift
  local o; o=$(env ${env:-PWPA_NOTHING=1} timeout 40 $bin bench "$@" --device cuda --dtype f32 -n $N --repeats 10 2>&1)
  printf '%-6s %-36s %s\n' "$name" "$*" "$(echo "$o" | row)"
  [ -n "${WARP_LAYOUT:-}" ] && printf '       %s\n' "$(echo "$o" | grep -E '^pwpa: ' | head -1 | sed 's/.*shared memory: //')"
  return 0
}
VARIANTS=${WARP_VARIANTS:-head:.gpu/head/pwpa warp:.gpu/pwpa}
echo "== sweep tables"
for spec in ${WARP_SPECS:-random:256:3:uniform random:1024:5:uniform random:1024:8:uniform random:4096:8:uniform random:1024:3:arbitrary random:1024:5:arbitrary random:4096:8:arbitrary}; do
  for v in $VARIANTS; do one $v $spec; done
done
echo "== catalogue f32 tables, N(0, 16) inputs"
for f in ${WARP_FUNCS:-silu gelu exp sigmoid selu tanh}; do
  for v in $VARIANTS; do one $v .gpu-tables/$f.json --normal 4; done
done
