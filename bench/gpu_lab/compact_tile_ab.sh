#!/usr/bin/env bash
# Device-side lab (with .gpu and .gpu-tables carried, and .gpu/pwpa-c1: the CLI of 87bd766,
# whose compaction of exp2-tail elements works chunk by chunk with a ballot per element):
# f32 catalogue tables with exp2 tails, interleaved: c1 (per chunk), t1 (.gpu/pwpa-t1: per
# tile of UNROLL chunks with one warp scan, inputs live to the end), tile (.gpu/pwpa:
# inputs dead once gathered), off (PWPA_CUDA_COMPACT=0). Prints one line per measurement
# (fraction of copy last but one). TILE_FUNCS and TILE_VARIANTS choose what runs.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
row() { grep -E "^\| pwpa " | tail -1; }
for f in ${TILE_FUNCS:-gelu gelu_tanh sigmoid exp exp2 softplus log_sigmoid selu user_expr silu}; do
  for v in ${TILE_VARIANTS:-c1 t1 tile off}; do
    case $v in
      c1) B=.gpu/pwpa-c1; c=1 ;;
      t1) B=.gpu/pwpa-t1; c=1 ;;
      tile) B=.gpu/pwpa; c=1 ;;
      off) B=.gpu/pwpa; c=0 ;;
    esac
    printf '%-5s %-12s ' $v $f
    PWPA_CUDA_COMPACT=$c timeout 40 $B bench .gpu-tables/$f.json --device cuda --dtype f32 -n 67108864 --repeats 10 2>&1 | row
  done
done
