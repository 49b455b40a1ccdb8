set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p .whl && cp .gpu/whl/*.whl .whl/
t0=$(date +%s); timeout 260 bash bindings/python/run_gpu_tests.sh -a > $OUT/python.log 2>&1; echo "python tests rc=$? $(grep -E 'passed|failed' $OUT/python.log | tail -1) ($(( $(date +%s)-t0 )) s)"
grep -E "FAILED|Error" $OUT/python.log | head -10
bash bench/gpu_lab/call_overhead.sh 2>&1 | head -16
bash .gpu/torch_bench.sh > $OUT/tb.log 2>&1; tail -3 $OUT/tb.log
