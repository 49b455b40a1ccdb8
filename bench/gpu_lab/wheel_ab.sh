#!/usr/bin/env bash
# Device-side lab (issue 5): two builds of the Python package, A/B through
# bench/torch_bench.py. Carry .gpu (with .gpu/whl-a/ and .gpu/whl-b/, one wheel each) and
# .gpu-tables. First the GPU tests of .gpu/test-gpu (WHEEL_NO_TESTS=1 skips them), then
# WHEEL_ROUNDS rounds (default 2) of: A then B, each `torch_bench.py --device cuda
# --no-compile` with WHEEL_ARGS (default: the backward pass of the exp2-tail functions in
# bf16 and f16); the markdown rows of each run are printed, prefixed by the variant
# (a failed run prints its last lines). WHEEL_SAME=1: one wheel (.gpu/whl/) for both, the
# variants differing only in their environment, WHEEL_ENV_A and WHEEL_ENV_B (e.g.
# WHEEL_ENV_A=PWPA_CUDA_FULLLUT=0).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
if [ -z "${WHEEL_NO_TESTS:-}" ]; then
  echo "== tests (.gpu/test-gpu)"
  timeout 200 .gpu/test-gpu --test-threads=2 2>&1 | grep -E "^test |test result|panicked" | head -20
fi
for v in a b; do
  mkdir -p /tmp/site-$v
  w=.gpu/whl-$v
  [ -n "${WHEEL_SAME:-}" ] && w=.gpu/whl
  python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target /tmp/site-$v $w/pwpa-*.whl
done
ARGS=${WHEEL_ARGS:---backward --dtypes bf16,f16 --functions exp,gelu,silu,sigmoid,softplus}
for r in $(seq ${WHEEL_ROUNDS:-2}); do
  for v in a b; do
    echo "== round $r variant $v"
    if [ $v = a ]; then e=${WHEEL_ENV_A:-}; else e=${WHEEL_ENV_B:-}; fi
    env $e PYTHONPATH=/tmp/site-$v timeout 250 python3 bench/torch_bench.py --device cuda --reps 10 --no-compile \
      --tables .gpu-tables --out /tmp/wab-$v-$r $ARGS > /tmp/wab-$v-$r.log 2>&1 || tail -5 /tmp/wab-$v-$r.log
    grep -E "^\| [a-z_]+ \|" /tmp/wab-$v-$r.md | sed "s/^/$v /"
  done
done
