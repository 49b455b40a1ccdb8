#!/usr/bin/env bash
# Device-side lab (issue 4/5): plain `pwpa bench` of catalogue f32 tables (FUNCS) on N(0, 16) inputs, then
# Nsight Compute with instruction counts, issue activity and stall reasons. With .gpu and .gpu-tables
# carried; NCU_BIN chooses the CLI. (Session 14; results in bench/results/gpu-2026-11-23-h100-s14-lab.md.)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
B=${NCU_BIN:-.gpu/pwpa}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
for f in ${FUNCS:-gelu exp erf}; do
  echo "=== bench $f"
  $B bench .gpu-tables/$f.json --normal 4 --device cuda --dtype f32 --repeats 7 2>&1 | tail -8
done
M=smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
for s in long_scoreboard short_scoreboard mio_throttle lg_throttle math_pipe_throttle wait not_selected barrier membar branch_resolving no_instruction dispatch_stall drain selected; do
  M=$M,smsp__average_warp_latency_issue_stalled_$s.ratio
done
for f in ${FUNCS:-gelu exp erf}; do
  echo "=== ncu $f"
  timeout 150 ncu --kernel-name regex:pwpa_eval --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --metrics $M \
    $B bench .gpu-tables/$f.json --normal 4 --device cuda --dtype f32 -n 67108864 --repeats 2 2>&1 |
    grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Block Size|Grid Size|Shared Memory Config|Dynamic Shared|smsp__|l1tex__|dram__" | head -40
done
