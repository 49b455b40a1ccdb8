#!/bin/bash
# Device-side A/B of pwpa.cu's stream cache hints (IOH, session 28) in one build: the
# carried wheel (.gpu/whl) run by bench/torch_bench.py with PWPA_CUDA_IOH unset (the
# host's choice per kernel mode) and set to each of $IOHS, in interleaved rounds.
# Prints, per function and setting, "ms" lines of torch_bench (allocating `table(x)`,
# out=, eager, eager out=) and, with BACKWARD=1, the backward rows.
# Env: ROUNDS (2), IOHS ("1 0 2"), FUNCS, DTYPES (f32), BACKWARD.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
site=/tmp/site-ioh; mkdir -p $site
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $site \
  $(ls -t .gpu/whl/pwpa-*.whl | head -1)
tmp=$(mktemp -d /tmp/ioh.XXXXXX)
for r in $(seq ${ROUNDS:-2}); do
  for h in default ${IOHS:-1 0 2}; do
    echo "=== IOH $h round $r"
    ( [ $h != default ] && export PWPA_CUDA_IOH=$h
      PYTHONPATH=$site python3 bench/torch_bench.py --device cuda --reps 10 --tables .gpu-tables \
        --dtypes ${DTYPES:-f32} --no-compile ${BACKWARD:+--backward} ${FUNCS:+--functions $FUNCS} \
        --out $tmp/ioh-$h-$r 2>&1 | awk '/^\[/ {f = $1; next} /copy|bwd|backward/ {print f, $0}' )
  done
done
[ -n "${OUT:-}" ] && cp $tmp/*.csv $OUT/
