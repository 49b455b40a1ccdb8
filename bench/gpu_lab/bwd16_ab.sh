#!/bin/bash
# Device-side lab (session 31): bwd16_probe.py once per setting of the tuning variables
# (a setting: comma-separated VAR=value; A=1 the defaults; W=old the wheel in .gpu/old/),
# interleaved over ROUNDS (1). Env: SETTINGS, NAMES (silu tanh gelu elu), TABLES (.gpu-tables).
. "$(dirname "$0")/ab_sites.sh"
for r in $(seq ${ROUNDS:-1}); do
  for s in ${SETTINGS:-A=1}; do
    site=/tmp/site-ab
    vars=()
    for kv in ${s//,/ }; do
      case $kv in
        W=old) site=/tmp/site-ab-old ;;
        *) vars+=("$kv") ;;
      esac
    done
    echo "=== $s round $r"
    env "${vars[@]}" PYTHONPATH=$site python3 bench/gpu_lab/bwd16_probe.py \
      --tables ${TABLES:-.gpu-tables} ${NAMES:-silu tanh gelu elu} 2>&1
  done
done
