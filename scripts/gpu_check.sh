#!/usr/bin/env bash
# GPU check of the CUDA backend (issue 4), in two halves:
#   here (no GPU needed): build the release test binaries and the `pwpa` CLI, strip
#     them, copy them with the device-side script into /work/main/.gpu/ (ignored by
#     git; the device tool sends /work/main plus carried paths), and print the exact
#     device `run` invocation;
#   there: `bash .gpu/run.sh` runs the GPU tests (incl. the 10^8-input and 2^31-element
#     tests), compute-sanitizer memcheck and racecheck over the GPU tests (quick mode),
#     the benchmarks (sweep, study, catalogue functions), the Python GPU and CPU suites
#     (bindings/python/run_gpu_tests.sh -a) when the CUDA wheel is in .gpu/whl/, writes
#     logs/CSVs to $OUT and a short table last;
#   or `bash .gpu/all.sh`: the PyTorch GPU benchmark (bench/torch_bench.py) first, then the above.
# Usage: scripts/gpu_check.sh [DEST]   (DEST defaults to /work/main/.gpu)
# Run it in a tree where `pwpa bench` is wired (main after the merge). On 2026-11-22 it was
# run from an integrated copy: main@45274dc with crates/pwpa-cuda and bench.rs of branch cuda.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-/work/main/.gpu}
cargo build --release -p pwpa-cli
mapfile -t TESTS < <(cargo test -p pwpa-cuda --release --no-run --message-format=json 2>/dev/null |
  python3 -c 'import sys,json
for l in sys.stdin:
    try: m=json.loads(l)
    except Exception: continue
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"]==["test"]:
        print(m["target"]["name"]+" "+m["executable"])')
mkdir -p "$DEST"
rm -f "$DEST"/pwpa "$DEST"/test-*
cp target/release/pwpa "$DEST/pwpa"
for t in "${TESTS[@]}"; do
  name=${t%% *}; exe=${t#* }
  cp "$exe" "$DEST/test-$name"
done
strip "$DEST"/pwpa "$DEST"/test-* 2>/dev/null || true
cp scripts/gpu_run.sh "$DEST/run.sh"
cp scripts/gpu_all.sh "$DEST/all.sh"
cp scripts/gpu_torch_bench.sh "$DEST/torch_bench.sh"
# The Python package with CUDA support, for the Python GPU tests on the device.
if [ -f bindings/python/build_gpu_wheel.sh ]; then
  bash bindings/python/build_gpu_wheel.sh >/dev/null
  mkdir -p "$DEST/whl"
  rm -f "$DEST"/whl/*.whl
  cp .whl/*.whl "$DEST/whl/"
fi
du -sh "$DEST"
echo
echo "Device invocation (tool 'run'), GPU check only:"
echo "  command: bash .gpu/run.sh"
echo "  carry:   [\".gpu\"]"
echo "  timeout_s: 600"
echo "Or the PyTorch GPU benchmark first, then the GPU check (about 8 minutes on an H100 whose"
echo "kernel cache is warm; a freshly started machine can exceed one 600-s call: then run"
echo "'bash .gpu/run.sh' and 'bash .gpu/torch_bench.sh' as two calls):"
echo "  command: bash .gpu/all.sh"
echo "  carry:   [\".gpu\", \".gpu-tables\"]   (.gpu-tables optional: scripts/fit_bench_tables.sh fits them)"
echo "  timeout_s: 600"
