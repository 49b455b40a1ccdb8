#!/bin/bash
# Device side (session 28): place32.py for three f32 tables (exp2-tail compaction, an
# ordered-key grid, a uniform table) under three IOH settings, two interleaved rounds.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
site=/tmp/site-p; mkdir -p $site
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --upgrade --target $site \
  $(ls -t .gpu/whl/pwpa-*.whl | head -1)
for r in 1 2; do for h in ${IOHS:-1 4 0}; do for f in sigmoid reciprocal gelu; do
  printf "IOH %s r%s: " $h $r
  PWPA_CUDA_IOH=$h PYTHONPATH=$site python3 bench/gpu_lab/place32.py .gpu-tables/$f.json $f 2>&1 | tail -1
done; done; done
