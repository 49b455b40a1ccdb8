#!/bin/bash
# Device-side lab (sessions 29-30): torch_bench under settings of the tuning variables, in
# interleaved rounds; a setting is a comma-separated list of VAR=value (A=1: the defaults).
# Two pseudo-variables pick what a setting runs: W=old the baseline wheel in .gpu/old/ (else
# the newest in .gpu/whl/), T=DIR the tables (else .gpu-tables). Prints torch_bench's "copy"
# lines (allocating, out=, eager, eager out=) and, with BACKWARD=1, its backward lines.
# Written for the f32 forward tile rules on the H200 (fast_group in
# crates/pwpa-cuda/src/table.rs); ioh_ab.sh runs it for the cache hints.
# Env: ROUNDS (2), SETTINGS, FUNCS (gelu,silu,sigmoid,tanh,exp,hardswish,reciprocal; "all":
# every function), DTYPES (f32; comma-separated), BACKWARD. .gpu (with the CUDA wheel) and
# the table directories carried; the CSVs go to $OUT when it is set.
. "$(dirname "$0")/ab_sites.sh"
funcs=${FUNCS:-gelu,silu,sigmoid,tanh,exp,hardswish,reciprocal}
tmp=$(mktemp -d /tmp/ab.XXXXXX)
for r in $(seq ${ROUNDS:-2}); do
  k=0
  for s in ${SETTINGS:-A=1 PWPA_CUDA_WSUB=0 PWPA_CUDA_WSUB=1,PWPA_CUDA_GW=16}; do
    k=$((k + 1))
    site=/tmp/site-ab
    tables=.gpu-tables
    vars=()
    for kv in ${s//,/ }; do
      case $kv in
        W=old) site=/tmp/site-ab-old ;;
        T=*) tables=${kv#T=} ;;
        *) vars+=("$kv") ;;
      esac
    done
    echo "=== $s round $r"
    ( env "${vars[@]}" PYTHONPATH=$site python3 bench/torch_bench.py --device cuda --reps 10 \
        --tables "$tables" --dtypes ${DTYPES:-f32} --no-compile ${BACKWARD:+--backward} \
        $( [ "$funcs" != all ] && echo --functions $funcs ) \
        --out $tmp/ab-$k-$r 2>&1 | awk '/^\[/ {f = $1; next} /copy|backward/ {print f, $0}' )
  done
done
[ -n "${OUT:-}" ] && cp $tmp/*.csv $OUT/
