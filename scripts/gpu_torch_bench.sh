#!/usr/bin/env bash
# Device side (copied to .gpu/torch_bench.sh by scripts/gpu_check.sh): install the carried
# CUDA wheel privately and run bench/torch_bench.py on the GPU (N = 2^28). Tables come from
# .gpu-tables/<name>.json when that folder is carried (fitted here by
# scripts/fit_bench_tables.sh); missing ones are fitted on the device.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
site=$(mktemp -d /tmp/pwpa-site.XXXXXX)
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" $(ls -t .gpu/whl/pwpa-*.whl | head -1)
export PYTHONPATH=$site
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout ${TB_TIMEOUT:-560} python3 bench/torch_bench.py --device cuda --reps 10 $( [ -d .gpu-tables ] && echo --tables .gpu-tables ) --out $OUT/torch-cuda "$@" 2>&1 | tail -60
