#!/usr/bin/env bash
# Device-side lab (issue 4, session 10): two float4 planes piece by piece with half of each
# access phase reading them in the other order (SWZ), against the plain interleaved copies
# (PWPA_CUDA_SWZ=0), one binary. With the CLI and test binary in $G (default .gpu/s10)
# carried. Interleaved rounds of the target tables, then the f32 bit-exactness test with
# the swizzle at 1 copy, then Nsight Compute's shared-memory wavefronts for one table.
# SWZ_N (elements, default 2^28), SWZ_ROUNDS, SWZ_SPECS, SWZ_VARIANTS (NAME:VAR=VALUE ...),
# SWZ_NCU=0 skips the profiles.
set -u
G=${G:-.gpu/s10}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
N=${SWZ_N:-268435456}
START=$(date +%s)
left() { echo $(( ${SWZ_BUDGET:-520} - ($(date +%s) - START) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
date -u
row() { grep -E "^\| pwpa " | tail -1 | awk -F'|' '{printf "ms %s copy %s frac %s", $9, $10, $12}'; }
one() { # name env spec args...
  local name=$1 env=$2; shift 2
  local o; o=$(env $env timeout 60 $G/pwpa bench "$@" --device cuda --dtype f32 -n $N --repeats 15 2>&1)
  printf '%-5s %-28s %s | %s\n' "$name" "$*" "$(echo "$o" | row)" "$(echo "$o" | grep -E '^pwpa: ' | head -1 | sed 's/.*kernel, //')"
}
# The tables whose records are two float4 planes (the others compile to the same kernel
# either way); SWZ_EXTRA: more variants for the tables that the swizzle moves to tile
# tickets per block (SWZ_EXTRA_SPECS).
VARIANTS=${SWZ_VARIANTS:-off:PWPA_CUDA_SWZ=0 on:PWPA_CUDA_SWZ=1}
SPECS=${SWZ_SPECS:-random:1024:5:arbitrary random:1024:8:arbitrary random:4096:5:arbitrary random:4096:8:arbitrary random:4096:8:uniform random:1024:8:uniform}
EXTRA=${SWZ_EXTRA:-onw2:PWPA_CUDA_SWZ=1,PWPA_CUDA_WSUB=2}
EXTRA_SPECS=${SWZ_EXTRA_SPECS:-random:1024:5:arbitrary random:1024:8:uniform}
for round in $(seq 1 ${SWZ_ROUNDS:-2}); do
  echo "== round $round ($(date -u +%H:%M:%S) UTC)"
  for spec in $SPECS; do
    vs=$VARIANTS
    case " $EXTRA_SPECS " in *" $spec "*) vs="$VARIANTS $EXTRA";; esac
    for v in $vs; do
      [ "$(left)" -lt 200 ] && { echo "(time budget: stop)"; break 3; }
      one "${v%%:*}" "$(echo "${v#*:}" | tr , ' ')" "$spec"
    done
  done
done
if [ -z "${SWZ_NO_TESTS:-}" ]; then
  # The swap with one copy (every lane pair swapped; the host picks 4 copies at P = 1024
  # and 1 at P = 4096, 8 below): the full GPU check covers the host's own choices.
  echo "== random_f32_inputs_match_cpu with PWPA_CUDA_REPL=1 ($(date -u +%H:%M:%S) UTC)"
  PWPA_CUDA_REPL=1 timeout $(( $(left) - 45 )) $G/test-gpu --test-threads=2 random_f32_inputs_match_cpu 2>&1 |
    grep -E "test result|panicked|mismatch|running" | head -5
fi
if [ "${SWZ_NCU:-1}" != 0 ]; then
  for spec in ${SWZ_NCU_SPECS:-random:1024:5:arbitrary}; do
    for v in $VARIANTS; do
      [ "$(left)" -lt 25 ] && break 2
      echo "=== ncu $spec ${v}"
      env ${v#*:} timeout $(( $(left) - 5 )) ncu --kernel-name regex:pwpa_eval --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section SchedulerStats \
        --metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,dram__bytes.sum \
        $G/pwpa bench $spec --device cuda --dtype f32 -n 67108864 --repeats 2 2>&1 |
        grep -E "Duration|DRAM Throughput|Memory Throughput|Issue Slots|Issued Warp|No Eligible|smsp__|l1tex__|dram__" | head -14
    done
  done
fi
date -u
