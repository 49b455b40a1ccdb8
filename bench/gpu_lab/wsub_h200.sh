#!/bin/bash
# Device-side lab (session 11): f32 tile tickets per warp with WSUB steps on a fast-memory
# device: PyTorch benchmark (f32, every function) and the CLI sweep under each setting.
# .gpu and .gpu-tables carried. Writes $OUT/torch-wsub-*.md; prints the f32 rows of each.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for w in ${SETTINGS:-default 8 4}; do
  e=A=1; [ "$w" != default ] && e=PWPA_CUDA_WSUB=$w
  env $e bash .gpu/torch_bench.sh --no-compile --dtypes f32 --out $OUT/torch-wsub-$w > /dev/null 2>&1
  echo "== torch f32, $e"
  grep "^| [a-z]" $OUT/torch-wsub-$w.md | awk -F'|' '{print $2, $5, $6, $9}'
  rm -f $OUT/torch-wsub-$w.csv
done
for w in ${SWEEP_SETTINGS:-8}; do
  e=A=1; [ "$w" != default ] && e=PWPA_CUDA_WSUB=$w
  echo "== sweep, $e"
  env $e timeout 150 .gpu/pwpa bench random:256:3 --device cuda --sweep --repeats 9 --out-dir /tmp/sw-$w > /dev/null 2>&1
  awk -F, 'NR>1 && $1=="pwpa" && $2=="f32" {printf "%s %s P=%s D=%s %.3f\n",$2,$3,$4,$5,$11}' /tmp/sw-$w/gpu-sweep.csv
done
