#!/bin/bash
# Device-side lab (session 11): `pwpa bench` under the tuning variables, one run each;
# .gpu and .gpu-tables carried.
#   COPYBENCH=1   first copybench.cu's streaming patterns (nvcc on the device)
#   FUNCS="gelu sigmoid ..."   the catalogue's f32 tables (.gpu-tables) on N(0, 4^2) inputs
#                 instead of the random tables (generating 2^28 normal inputs on the host
#                 is slow: budget ~10 s per run)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=.gpu/pwpa
[ -n "${COPYBENCH:-}" ] && (cd bench/gpu_lab && nvcc -O3 -arch=sm_90 -o /tmp/copybench copybench.cu && /tmp/copybench 1073741824 2>&1 | tail -25)
one() { # label VAR=value [bench options...]
  local label=$1 e=$2; shift 2
  echo "== $label"; env $e timeout 60 $B bench $SPEC --device cuda --dtype $DT --repeats 9 "$@" 2>&1 | grep -E "^\| pwpa|rror" | tail -1
}
if [ -n "${FUNCS:-}" ]; then
  DT=f32
  for f in $FUNCS; do SPEC=.gpu-tables/$f.json
    for e in A=1 PWPA_CUDA_UNROLL=8 PWPA_CUDA_UNROLL=2 PWPA_CUDA_WSUB=0 PWPA_CUDA_WSUB=8 PWPA_CUDA_COMPACT=0 PWPA_CUDA_BLOCK=512; do
      one "$f $e" $e --normal 4
    done
  done
  exit 0
fi
for DT in bf16 f16; do SPEC=random:256:3:uniform
  for e in A=1 PWPA_CUDA_KERNEL=poly PWPA_CUDA_BLOCK=512 PWPA_CUDA_UNROLL=8 PWPA_CUDA_WSUB=0 PWPA_CUDA_WSUB=8; do
    one "$DT $e" $e
  done
done
DT=f32
for SPEC in random:1024:5:arbitrary random:256:3:arbitrary random:1024:5:uniform; do
  for e in A=1 PWPA_CUDA_SMEM_KB=128 PWPA_CUDA_SMEM_KB=96 PWPA_CUDA_UNROLL=8 PWPA_CUDA_BLOCK=512; do
    one "$SPEC $e" $e
  done
done
