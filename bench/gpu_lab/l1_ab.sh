#!/usr/bin/env bash
# Device-side lab (issue 4): the copy model's price for shared memory past 164 KB, the
# half-tile compaction buffer and the core-first compaction, against the CLIs before them.
# With .gpu and .gpu-tables carried and earlier CLIs beside .gpu/pwpa. First the GPU tests
# that run the changed code (compaction, backward, odd sizes) and memcheck over the
# compaction tests, then per table, interleaved, each variant of L1_VARIANTS (NAME:BINARY
# [:COMPACT], default base:.gpu/base/pwpa new:.gpu/pwpa); each prints the bench row
# (fraction of copy last but one) and its kernel line (shared memory and copies).
# L1_SPECS, L1_FUNCS (f32 tables on N(0, 16) inputs), L1_UFUNCS (uniform inputs), L1_N.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
N=${L1_N:-67108864}
echo "== tests (new)"
timeout 120 .gpu/test-gpu --test-threads=2 random_f32 backward odd_sizes exp2_tail_shares 2>&1 | grep -E "^test |test result"
PWPA_GPU_TEST_QUICK=1 timeout 120 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 .gpu/test-gpu --test-threads=1 exp2_tail_shares odd_sizes 2>&1 | grep -E "ERROR SUMMARY|test result|Invalid" | head -5
row() { grep -E "^\| pwpa " | tail -1; }
VARIANTS=${L1_VARIANTS:-base:.gpu/base/pwpa new:.gpu/pwpa}
one() { # variant args...
  local name bin c; IFS=: read -r name bin c <<< "$1"; shift
  local o; o=$(PWPA_CUDA_COMPACT=${c:-1} timeout 40 $bin bench "$@" --device cuda --dtype f32 -n $N --repeats 10 2>&1)
  printf '%-5s %-34s %s\n' "$name" "$*" "$(echo "$o" | row)"
  printf '      %s\n' "$(echo "$o" | grep -E '^pwpa: ' | head -1)"
}
echo "== sweep tables"
for spec in ${L1_SPECS:-random:1024:3:arbitrary random:1024:5:arbitrary random:1024:8:arbitrary random:1024:8:uniform random:4096:5:uniform random:4096:8:uniform random:4096:5:arbitrary random:256:3:uniform}; do
  for v in $VARIANTS; do one $v $spec; done
done
echo "== catalogue f32 tables, N(0, 16) inputs"
for f in ${L1_FUNCS:-silu gelu gelu_tanh sigmoid exp exp2 softplus selu log_sigmoid}; do
  for v in $VARIANTS; do one $v .gpu-tables/$f.json --normal 4; done
done
echo "== catalogue f32 tables, inputs uniform over the range +- 10 %"
for f in ${L1_UFUNCS:-gelu silu exp softplus}; do
  for v in $VARIANTS; do one $v .gpu-tables/$f.json; done
done
