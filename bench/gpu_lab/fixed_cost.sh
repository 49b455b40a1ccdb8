#!/bin/bash
# Device side: bench/gpu_lab/fixed_cost.py with the carried wheel, under each variant in
# VARIANTS ("A=1 PWPA_CUDA_WSUB=2,PWPA_CUDA_X=y ..."); extra arguments go to the script.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
site=$(mktemp -d /tmp/pwpa-site.XXXXXX)
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" $(ls -t .gpu/whl/pwpa-*.whl | head -1)
export PYTHONPATH=$site
for v in ${VARIANTS:-A=1}; do
  env ${v//,/ } python3 bench/gpu_lab/fixed_cost.py --label "$v" "$@"
done
