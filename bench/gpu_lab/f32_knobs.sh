#!/bin/bash
# Device-side lab (session 11): the catalogue's f32 tables (.gpu-tables, inputs N(0, 4^2))
# under the tuning variables, one run each; .gpu and .gpu-tables carried.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader
for f in ${FUNCS:-gelu sigmoid silu exp tanh}; do
  for e in A=1 PWPA_CUDA_UNROLL=8 PWPA_CUDA_UNROLL=2 PWPA_CUDA_WSUB=0 PWPA_CUDA_WSUB=8 PWPA_CUDA_COMPACT=0 PWPA_CUDA_BLOCK=512 ${EXTRA:-}; do
    r=$(env $e timeout 60 .gpu/pwpa bench .gpu-tables/$f.json --device cuda --dtype f32 --normal 4 --repeats 9 2>&1 | awk -F'|' '/^\| pwpa/{print $8, $9, $10, $12}')
    echo "$f $e: $r"
  done
done
