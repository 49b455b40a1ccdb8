#!/usr/bin/env bash
# Device side, session 15: PWPA_CUDA_PREFETCH (each lane copies its chunks of the warp's next
# step into shared memory with cp.async while the current step is evaluated). The GPU tests
# with it forced on every kernel (PWPA_CUDA_WSUB=4 makes every kernel take tiles per warp,
# which prefetching needs), memcheck and racecheck likewise, then an A/B of one CLI with
# PREFETCH=0 and 1 (bench/gpu_lab/cli_ab.sh). Binaries in $G (default .gpu/pf).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
G=${G:-.gpu/pf}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  t0=$(date +%s)
  PWPA_CUDA_WSUB=4 PWPA_CUDA_PREFETCH=1 timeout ${TEST_S:-280} $G/test-gpu --include-ignored --test-threads=2 2>&1 |
    grep -E "^test |^test result|panicked|FAILED" | tail -16
  echo "gpu tests, prefetch forced: $(( $(date +%s)-t0 )) s"
  for tool in memcheck racecheck; do
    tests="odd_sizes exp2_tail_shares bad_input"
    [ $tool = racecheck ] && tests="exp2_tail_shares bad_input"
    PWPA_CUDA_WSUB=4 PWPA_CUDA_PREFETCH=1 PWPA_GPU_TEST_QUICK=1 timeout 100 compute-sanitizer --tool $tool \
      --report-api-errors no --error-exitcode 9 $G/test-gpu --test-threads=1 $tests 2>&1 |
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^test result|Error|Hazard" | head -6
    echo "$tool rc=${PIPESTATUS[0]}"
  done
fi
A=$G/pwpa B=$G/pwpa ENV_A=PWPA_CUDA_PREFETCH=0 ENV_B=PWPA_CUDA_PREFETCH=1 \
  TARGETS="${TARGETS:-gelu exp softplus gelu_tanh sigmoid silu random:1024:5:arbitrary random:4096:5:arbitrary random:4096:8:uniform random:256:3:uniform}" \
  ROUNDS=${ROUNDS:-2} REP=${REP:-9} bash bench/gpu_lab/cli_ab.sh
