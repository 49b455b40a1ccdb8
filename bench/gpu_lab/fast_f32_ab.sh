#!/bin/bash
# Device-side lab (session 29): the f32 forward kernels' tile rules on a fast-memory device
# (H200). torch_bench f32 (allocating and out=, eager, copy) under each setting of $SETTINGS,
# in interleaved rounds; a setting is a comma-separated list of VAR=value (A=1: the default).
# Env: ROUNDS (2), FUNCS (gelu,silu,sigmoid,tanh,exp,hardswish,reciprocal), SETTINGS.
# .gpu (with the CUDA wheel) and .gpu-tables carried.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
site=/tmp/site-ff32; mkdir -p $site
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $site \
  $(ls -t .gpu/whl/pwpa-*.whl | head -1)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
tmp=$(mktemp -d /tmp/ff32.XXXXXX)
for r in $(seq ${ROUNDS:-2}); do
  for s in ${SETTINGS:-A=1 PWPA_CUDA_WSUB=0 PWPA_CUDA_WSUB=1,PWPA_CUDA_GW=16}; do
    echo "=== $s round $r"
    ( env ${s//,/ } PYTHONPATH=$site python3 bench/torch_bench.py --device cuda --reps 10 \
        --tables .gpu-tables --dtypes f32 --no-compile \
        --functions ${FUNCS:-gelu,silu,sigmoid,tanh,exp,hardswish,reciprocal} \
        --out $tmp/ff32-$r 2>&1 | awk '/^\[/ {f = $1; next} /copy/ {print f, $0}' )
  done
done
