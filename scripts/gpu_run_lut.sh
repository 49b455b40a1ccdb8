#!/usr/bin/env bash
# Short device run for the result-table (LUT) kernel: the GPU tests (without the 10^8 f32
# test), then the speed sweep twice — default kernel choice (auto: result table for 16-bit
# in and out) and PWPA_CUDA_KERNEL=poly — and two catalogue functions. Binaries from
# scripts/gpu_check.sh DEST with this script copied next to them:
#   scripts/gpu_check.sh /work/main/.gpu-lut && cp scripts/gpu_run_lut.sh /work/main/.gpu-lut/run.sh
# Device call: run(command="bash .gpu-lut/run.sh", carry=[".gpu-lut"]); KERNELS=auto (default
# "auto poly") limits the sweeps and function benches to the given kernel choices.
set -u
G=$(dirname "$0")
FINAL=${OUT:-/tmp/pwpa-gpu-out}
W=/tmp/pwpa-lut-work
rm -rf "$W"; mkdir -p "$W/poly" "$W/auto" "$FINAL"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PWPA_CACHE_DIR=/tmp/pwpa-cache
S=$W/summary.txt; : > "$S"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$W/device.txt"
t0=$(date +%s)
timeout 130 $G/test-gpu --include-ignored --skip hundred_million --test-threads=2 --nocapture > "$W/tests.log" 2>&1
echo "== gpu tests rc=$? $(grep -E '^test result' "$W/tests.log" | tail -1) ($(( $(date +%s)-t0 )) s)" >> "$S"
grep -E "FAILED|panicked|kernel$|bit-identical" "$W/tests.log" | head -8 >> "$S"
for k in ${KERNELS:-auto poly}; do
  t0=$(date +%s)
  PWPA_CUDA_KERNEL=$k timeout 75 $G/pwpa bench random:256:3 --device cuda --sweep --repeats 9 --out-dir "$W/$k" > "$W/sweep-$k.log" 2>&1
  echo "== sweep $k rc=$? ($(( $(date +%s)-t0 )) s)" >> "$S"
done
for spec in "gelu bf16" "silu f16"; do
  set -- $spec
  for k in ${KERNELS:-auto poly}; do
    PWPA_CUDA_KERNEL=$k timeout 15 $G/pwpa bench $1 --device cuda --dtype $2 --repeats 9 > "$W/fn-$1-$k.log" 2>&1
    echo "== $1 $2 $k rc=$? $(grep -iE 'pwpa' "$W/fn-$1-$k.log" | head -1)" >> "$S"
  done
done
echo "================ SUMMARY"
tail -1 "$W/device.txt"
cat "$S"
for k in ${KERNELS:-auto poly}; do
  echo "--- $k: kernel dtype kind P D u ms copy_ms fraction"
  [ -f "$W/$k/gpu-sweep.csv" ] && awk -F, 'NR>1 && ($1=="pwpa" || $1=="pwpa-unroll-sweep") {printf "%s %s %s P=%s D=%s u=%s %.4f %.4f %.3f\n",$1,$2,$3,$4,$5,$7,$8,$9,$11}' "$W/$k/gpu-sweep.csv"
done
tar czf "$FINAL/logs.tgz" -C "$W" . 2>/dev/null
cp "$S" "$FINAL/summary.txt"
for k in auto poly; do [ -f "$W/$k/gpu-sweep.csv" ] && cp "$W/$k/gpu-sweep.csv" "$FINAL/sweep-$k.csv"; done
true
