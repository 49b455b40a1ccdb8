#!/bin/bash
# H200 lab (session 11): copy patterns, then env-knob variants of pwpa bench.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=.gpu/pwpa
[ -n "${COPYBENCH:-}" ] && (cd bench/gpu_lab && nvcc -O3 -arch=sm_90 -o /tmp/copybench copybench.cu && /tmp/copybench 1073741824 2>&1 | tail -25)
row() { grep -E "^\| pwpa" | awk -F'|' '{print $3,$4,$5,$6,$8,$9,$10,$12}'; }
one() { # label env... -- args
  local label=$1; shift
  echo "== $label"; env "$@" timeout 60 $B bench $SPEC --device cuda --dtype $DT --repeats 9 2>&1 | grep -E "^\| pwpa|rror" | tail -1
}
for DT in bf16 f16; do SPEC=random:256:3:uniform
  one "$DT default" A=1
  one "$DT KERNEL=poly" PWPA_CUDA_KERNEL=poly
  one "$DT BLOCK=512" PWPA_CUDA_BLOCK=512
  one "$DT UNROLL=8" PWPA_CUDA_UNROLL=8
  one "$DT WSUB=0" PWPA_CUDA_WSUB=0
  one "$DT WSUB=8" PWPA_CUDA_WSUB=8
done
DT=f32
for SPEC in random:1024:5:arbitrary random:256:3:arbitrary random:1024:5:uniform; do
  one "$SPEC default" A=1
  one "$SPEC SMEM_KB=128" PWPA_CUDA_SMEM_KB=128
  one "$SPEC SMEM_KB=96" PWPA_CUDA_SMEM_KB=96
  one "$SPEC UNROLL=8" PWPA_CUDA_UNROLL=8
  one "$SPEC BLOCK=512" PWPA_CUDA_BLOCK=512
done
