#!/usr/bin/env bash
# Device side: install the carried CUDA wheel privately, then bench/gpu_lab/call_overhead.py.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
site=$(mktemp -d /tmp/pwpa-site.XXXXXX)
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" $(ls -t .gpu/whl/pwpa-*.whl | head -1)
export PYTHONPATH=$site
python3 bench/gpu_lab/call_overhead.py "$@" 2>&1 | tee "${OUT:-/tmp}/call_overhead.txt" | head -80
