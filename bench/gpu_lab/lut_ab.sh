#!/bin/bash
# Device-side A/B of the 16-bit result-table kernel (session 11): .gpu/pwpa (before) and
# .gpu/pwpa-new (after) under environments, alternated, three rounds; .gpu and .gpu-tables
# carried. Variants: "BIN[:VAR=value]".
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader
VARIANTS=${VARIANTS:-pwpa pwpa-new}
for r in 1 2 3; do
  for spec in random:256:3:uniform .gpu-tables/gelu.json; do
    for dt in bf16 f16; do
      for v in $VARIANTS; do
        b=${v%%:*}; e=; [ "$b" != "$v" ] && e=${v#*:}
        f=$(env $e timeout 60 .gpu/$b bench $spec --device cuda --dtype $dt --repeats 9 2>&1 | awk -F'|' '/^\| pwpa/{print $9, $10, $12}')
        echo "round $r $v $spec $dt: $f"
      done
    done
  done
done
