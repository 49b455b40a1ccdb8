#!/usr/bin/env bash
# Device-side lab (with .gpu and .gpu-tables carried): f32 tables with exp2 tails, with
# and without warp compaction of the tail elements (PWPA_CUDA_COMPACT=0/1), forward;
# and interleaved record copies (PWPA_CUDA_REPL)
# for large f32 tables. Prints one line per measurement. COMPACT_FUNCS and REPL_SPECS
# (space-separated; REPL_SPECS= skips the second part) choose what runs.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
B=.gpu/pwpa
row() { grep -E "^\| pwpa " | tail -1; }
for f in ${COMPACT_FUNCS:-gelu exp sigmoid silu softplus log_sigmoid}; do
  for c in 0 1; do
    printf 'compact=%s %-12s ' $c $f
    PWPA_CUDA_COMPACT=$c timeout 40 $B bench .gpu-tables/$f.json --device cuda --dtype f32 --repeats 15 2>&1 | row
  done
done
for spec in ${REPL_SPECS-random:1024:5:uniform random:1024:8:uniform random:4096:8:uniform random:1024:5:arbitrary}; do
  for r in 8 4 2 1; do
    printf 'repl<=%s %-24s ' $r $spec
    PWPA_CUDA_REPL=$r timeout 40 $B bench $spec --device cuda --dtype f32 --repeats 10 2>&1 | row
  done
done
