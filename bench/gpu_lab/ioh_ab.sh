#!/bin/bash
# Device-side A/B of pwpa.cu's stream cache hints (IOH, session 28) in one build: the
# carried wheel (.gpu/whl) run by bench/torch_bench.py with PWPA_CUDA_IOH unset (the
# host's choice per kernel mode) and set to each of $IOHS, in interleaved rounds
# (fast_f32_ab.sh does the runs). Env: ROUNDS (2), IOHS ("1 0 2"), FUNCS (all), DTYPES
# (f32), BACKWARD.
settings="A=1"
for h in ${IOHS:-1 0 2}; do settings="$settings PWPA_CUDA_IOH=$h"; done
SETTINGS=$settings FUNCS=${FUNCS:-all} exec bash "$(dirname "$0")/fast_f32_ab.sh"
