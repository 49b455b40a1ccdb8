#!/usr/bin/env bash
# Device-side A/B (issue 4/5): two CLIs A and B (default .gpu/lab/pwpa-old and .gpu/pwpa) or one with two
# environments (ENV_A, ENV_B: VAR=value), alternating per target (TARGETS: catalogue tables from
# .gpu-tables with --normal 4, or random:P:D:kind), ROUNDS rounds; prints ms and fraction of copy.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
A=${A:-.gpu/lab/pwpa-old}; B=${B:-.gpu/pwpa}
frac() { "$@" 2>&1 | awk -F'|' '/^\| pwpa/{gsub(/ /,"",$9); gsub(/ /,"",$12); printf "%s ms %s", $9, $12}'; }
for t in ${TARGETS:-gelu exp sigmoid erf}; do
  if [[ $t == random:* ]]; then src=$t; extra=""; else src=.gpu-tables/$t.json; extra="--normal 4"; fi
  for r in $(seq ${ROUNDS:-2}); do
    a=$(frac env ${ENV_A:-X=0} $A bench $src $extra --device cuda --dtype ${DT:-f32} --repeats ${REP:-7})
    b=$(frac env ${ENV_B:-X=0} $B bench $src $extra --device cuda --dtype ${DT:-f32} --repeats ${REP:-7})
    echo "$t r$r  old: $a   new: $b"
  done
done
