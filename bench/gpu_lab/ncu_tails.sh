#!/usr/bin/env bash
# Device-side lab (issue 4/5): Nsight Compute on the f32 kernels of catalogue tables with
# exp2 tails on N(0, 16) inputs (what limits them below the copy). With .gpu and
# .gpu-tables carried. NCU_FUNCS chooses the tables, NCU_BIN the CLI (default .gpu/pwpa);
# PWPA_CUDA_* tuning variables pass through.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
B=${NCU_BIN:-.gpu/pwpa}
for f in ${NCU_FUNCS:-exp silu gelu}; do
  echo "=== $f"
  timeout 120 ncu --kernel-name regex:pwpa_eval --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
    --metrics smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio \
    $B bench .gpu-tables/$f.json --normal 4 --device cuda --dtype f32 -n 67108864 --repeats 2 2>&1 |
    grep -E "Duration|Memory Throughput|DRAM Throughput|Issue Slots|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Registers Per|Shared Memory Config|Dynamic Shared|smsp__|l1tex__|Stall|stall" | head -40
done
