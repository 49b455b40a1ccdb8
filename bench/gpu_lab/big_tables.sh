#!/usr/bin/env bash
# Device-side lab (run after scripts/gpu_check.sh, with .gpu carried): what limits f32
# tables with large records (issue 4) and f32 tables with exp2 tails (issue 5).
#  1. interleaved record copies (PWPA_CUDA_REPL) against occupancy for P = 1024/4096;
#  2. Nsight Compute on one launch each of P4096 D8 uniform, P1024 D8 uniform and the
#     bf16-exact gelu table in f32 (shared-memory wavefronts and bank conflicts, issue
#     slots, warp stalls).
# Writes $OUT/big_tables.txt and prints it.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
O=${OUT:-/tmp}/big_tables.txt
: > "$O"
B=.gpu/pwpa
for spec in random:1024:5:uniform random:1024:8:uniform random:4096:5:uniform random:4096:8:uniform random:1024:5:arbitrary random:4096:8:arbitrary; do
  for r in 8 4 2 1; do
    printf '%s repl<=%s: ' "$spec" "$r" >> "$O"
    PWPA_CUDA_REPL=$r timeout 30 $B bench $spec --device cuda --dtype f32 --repeats 10 2>&1 | grep -iE "fraction|copy" | tr '\n' ' ' >> "$O"
    echo >> "$O"
  done
done
M=sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,gpu__time_duration.sum
for spec in random:4096:8:uniform random:1024:8:uniform .gpu-tables/gelu.json .gpu-tables/exp.json; do
  echo "== ncu $spec f32" >> "$O"
  timeout 60 ncu --metrics $M -k pwpa_eval -s 2 -c 1 $B bench $spec --device cuda --dtype f32 -n 67108864 --repeats 2 2>&1 \
    | grep -E "^\s+(sm__|dram__|smsp__|l1tex__|gpu__)" >> "$O"
done
cat "$O"
