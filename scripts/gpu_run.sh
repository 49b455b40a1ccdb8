#!/usr/bin/env bash
# Device side of scripts/gpu_check.sh: run from the repository root on the GPU machine
# with .gpu/ carried. Writes logs and CSVs to $OUT; prints a short table last.
set -u
FINAL=${OUT:-/tmp/pwpa-gpu-out}
# Work in a scratch folder; only 8 files come back from $OUT (see the end).
OUT=/tmp/pwpa-gpu-work
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
G=$(dirname "$0")
S=$OUT/summary.txt
: > "$S"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$OUT/device.txt"
ldd $G/pwpa | grep -i "not found" && echo "WARNING: missing libraries for the carried binary"
$G/pwpa --version 2>&1 | head -1
step() { echo "== $1: $2" >> "$S"; }
START=$(date +%s)
# Time left for a step: its own cap, but never past 570 s of the whole run (the device
# tool stops a command at 600 s; the summary and the tarball take a few seconds).
tl() { local left=$(( 570 - ($(date +%s) - START) )); [ $left -lt 1 ] && left=1; [ $1 -lt $left ] && echo $1 || echo $left; }

# 1. GPU tests (release), incl. the ignored big ones (10^8 f32, 2^31 elements).
t0=$(date +%s)
# (A freshly started machine compiles every kernel first: the suite took more than 170 s
# there on 2026-11-22, 29 s with a warm kernel cache.)
timeout $(tl 240) $G/test-gpu --include-ignored --test-threads=2 > "$OUT/tests.log" 2>&1
rc=$?; step "gpu tests" "rc=$rc $(grep -E '^test result' "$OUT/tests.log" | tail -1) ($(( $(date +%s)-t0 )) s)"
grep -E "FAILED|panicked|failed" "$OUT/tests.log" | head -5 >> "$S"
timeout $(tl 90) $G/test-nvrtc_compile > "$OUT/nvrtc.log" 2>&1; step "nvrtc compile test" "rc=$?"
# The launch shape that devices above 4 TB/s (H200) choose for small f32 tables (blocks of
# 512 threads, one-step tiles per 16 warps), forced on every table: checked against the CPU
# on whatever device this is.
PWPA_CUDA_BLOCK=512 PWPA_CUDA_WSUB=1 PWPA_CUDA_GW=16 timeout $(tl 90) $G/test-gpu --test-threads=2 \
  tile_grid_launch > "$OUT/tests-fast-group.log" 2>&1
step "gpu tests, 512-thread 16-warp groups forced" "rc=$? $(grep -E '^test result' "$OUT/tests-fast-group.log" | tail -1)"
# The 16-bit full-table backward pass without its short path for chunks with no NaN
# input and no non-finite gradient (PWPA_CUDA_LEAN=0; the path every other chunk and
# every table with infinite results takes), checked against the CPU on every bf16/f16 input.
PWPA_CUDA_LEAN=0 timeout $(tl 90) $G/test-gpu --test-threads=2 backward > "$OUT/tests-nolean.log" 2>&1
step "gpu backward tests, PWPA_CUDA_LEAN=0" "rc=$? $(grep -E '^test result' "$OUT/tests-nolean.log" | tail -1)"
# The short path also for full tables with a middle run cut (FULLLUT 2; erf's f16
# derivative): PWPA_CUDA_LEAN=2, not the default until this has passed on a device.
PWPA_CUDA_LEAN=2 timeout $(tl 90) $G/test-gpu --test-threads=2 backward > "$OUT/tests-leanmid.log" 2>&1
step "gpu backward tests, PWPA_CUDA_LEAN=2" "rc=$? $(grep -E '^test result' "$OUT/tests-leanmid.log" | tail -1)"
# The result tables (TAILLUT, FULLLUT) staged by a 4-byte load per thread and round
# instead of bulk copies (PWPA_CUDA_STAGE4=0; the path of devices before sm_90), on every
# bf16/f16 input, forward (polynomial kernel) and backward.
PWPA_CUDA_STAGE4=0 timeout $(tl 120) $G/test-gpu --test-threads=2 backward every_bf16 > "$OUT/tests-stage4.log" 2>&1
step "gpu 16-bit tests, PWPA_CUDA_STAGE4=0" "rc=$? $(grep -E '^test result' "$OUT/tests-stage4.log" | tail -1)"

# 3. Benchmarks.
mkdir -p "$OUT/bench"
t0=$(date +%s)
timeout $(tl 150) $G/pwpa bench random:256:3 --device cuda --sweep --repeats 15 --out-dir "$OUT/bench" > "$OUT/bench-sweep.log" 2>&1
step "bench sweep" "rc=$? ($(( $(date +%s)-t0 )) s)"
timeout $(tl 70) $G/pwpa bench random:256:3 --device cuda --study --out-dir "$OUT/bench" > "$OUT/bench-study.log" 2>&1
step "bench study" "rc=$?"
for spec in "gelu bf16" "sigmoid f32" "tanh bf16" "silu f16"; do
  set -- $spec
  timeout $(tl 15) $G/pwpa bench $1 --device cuda --dtype $2 --repeats 10 >> "$OUT/bench-functions.log" 2>&1
  step "bench $1 $2" "rc=$?"
done

# 2. compute-sanitizer (quick mode: fewer tables), memcheck and racecheck.
export PWPA_GPU_TEST_QUICK=1
# racecheck (slow on launches that stage 100+ KB of shared memory: the odd-size test's
# hundreds of launches ran past 60 s on 2026-11-22) leaves the odd sizes to memcheck.
for tool in memcheck racecheck; do
  t0=$(date +%s)
  tests="odd_sizes bad_input seed_variants fused backward exp2_tail_shares"
  [ $tool = racecheck ] && tests="bad_input seed_variants fused backward exp2_tail_shares"
  timeout $(tl 90) compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $G/test-gpu --test-threads=1 \
    $tests > "$OUT/sanitizer-$tool.log" 2>&1
  rc=$?; step "compute-sanitizer $tool" "rc=$rc $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer-$tool.log" | tail -1) $(grep -E '^test result' "$OUT/sanitizer-$tool.log" | tail -1) ($(( $(date +%s)-t0 )) s)"
done
unset PWPA_GPU_TEST_QUICK

# 4. Python GPU tests (hook).
# The CUDA-enabled wheel (and pytest's wheels) built by scripts/gpu_check.sh; the tests
# and their runner are tracked files (bindings/python/), so they travel with the tree.
if ls $G/whl/pwpa-*.whl >/dev/null 2>&1; then
  mkdir -p .whl && cp $G/whl/*.whl .whl/
  timeout $(tl 200) bash bindings/python/run_gpu_tests.sh -a > "$OUT/python.log" 2>&1
  step "python tests (GPU + CPU suites)" "rc=$? $(grep -E 'passed|failed' "$OUT/python.log" | tail -1)"
fi

# Short table last.
echo
echo "================ GPU CHECK SUMMARY ================"
cat "$OUT/device.txt" | tail -1
cat "$S"
if [ -f "$OUT/bench/gpu-sweep.csv" ]; then
  echo "--- fraction of copy (N=2^28): kernel dtype kind P D unroll ms fraction"
  awk -F, 'NR>1 && ($1=="pwpa" || $1=="seed base-aos") {printf "%s %s %s P=%s D=%s u=%s %.4f ms %.3f\n",$1,$2,$3,$4,$5,$7,$8,$11}' "$OUT/bench/gpu-sweep.csv"
  echo "--- coarsening sweep"
  awk -F, 'NR>1 && $1=="pwpa-unroll-sweep" {printf "%s %s P=%s D=%s u=%s %.3f\n",$2,$3,$4,$5,$7,$11}' "$OUT/bench/gpu-sweep.csv"
  grep -E "first call" "$OUT/bench/gpu-sweep.md"
fi

# Hand back at most 8 files: the key results unpacked, everything else in logs.tgz.
tar czf "$FINAL/logs.tgz" -C "$OUT" . 2>/dev/null
cp "$S" "$FINAL/summary.txt"
for f in gpu-sweep.csv gpu-sweep.md gpu-study.csv gpu-study.md gpu-study.svg; do
  [ -f "$OUT/bench/$f" ] && cp "$OUT/bench/$f" "$FINAL/$f"
done
[ -f "$OUT/bench-functions.log" ] && cp "$OUT/bench-functions.log" "$FINAL/"
