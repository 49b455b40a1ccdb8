#!/usr/bin/env bash
# Device-side lab (session 32): Nsight Compute on the 16-bit backward kernel of catalogue
# tables (CASES: name:dtype ...), the third launch: instructions, issue activity, shared
# memory wavefronts, L1 hit rate, occupancy and stall reasons. Carry .gpu and .gpu-tables;
# SITE=/tmp/site-ab-old profiles the wheel in .gpu/old/.
set -u
. "$(dirname "$0")/ab_sites.sh"
export PWPA_CACHE_DIR=/tmp/pwpa-cache
M=smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active
for s in long_scoreboard short_scoreboard mio_throttle lg_throttle math_pipe_throttle wait not_selected barrier no_instruction selected; do
  M=$M,smsp__average_warp_latency_issue_stalled_$s.ratio
done
for c in ${CASES:-silu:float16 elu:float16 silu:bfloat16}; do
  echo "=== ncu ${c%%:*} ${c##*:}"
  PYTHONPATH=${SITE:-/tmp/site-ab} timeout 120 ncu --kernel-name regex:pwpa_eval --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --metrics $M \
    python3 bench/gpu_lab/ncu_bwd16.py ${c%%:*} ${c##*:} 2>&1 |
    grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occ|Dynamic Shared|smsp__|l1tex__|dram__|sm__warps" | head -40
done
