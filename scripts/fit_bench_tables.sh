#!/usr/bin/env bash
# Fit the benchmark's tables: one bf16-exact table per catalogue function, written to
# DIR/<name>.json (default .gpu-tables/, which bench/torch_bench.py --tables and the device
# scripts read; carry it with .gpu). Every table is correctly rounded to bf16 on every bf16
# input of its range; the script stops if a fit is not.
#
# Usage: scripts/fit_bench_tables.sh [--exp2-tails] [DIR]
#
# Default set: the tables that run fastest in f32 on the GPU (session 26, H100, torch_bench
# f32 at 2^28, N(0, 16) inputs; bench/results/torch-cuda-2026-11-27-h100-s26-tables.md).
#   - gelu, gelu_tanh, silu, mish, exp, exp2 (and sigmoid, softplus, log_sigmoid below): no
#     exp2 tails. The range reaches where the
#     function rounds to 0 in bf16, so the constant 0 tail is correctly rounded beyond it
#     too (every finite bf16 input, checked below), and the pieces are degree 4 on uniform
#     breakpoints. With exp2 tails on the side where typical inputs fall these tables
#     were 1-5 % slower than a copy of the same bytes (warp divergence, then compaction),
#     without them 0.2-0.5 %. On the CPU both kinds are well ahead of PyTorch (2^24 f32 on
#     two cores, ms: exp 5.5 with exp2 tails against 8.2 without, gelu 9.2 against 8.3).
#   - sigmoid, softplus, log_sigmoid (session 30): the same kind, on [-93, 17] ([-17, 93]
#     for log_sigmoid), where e^x rounds to 0 in bf16; 188, 132 and 132 pieces. H200,
#     torch_bench f32 2^28, two rounds, ms, exp2-tail tables -> these: sigmoid 0.550 -> 0.514,
#     softplus 0.550 -> 0.508, log_sigmoid 0.553 -> 0.510 (copy 0.502-0.503; eager 0.507,
#     0.518, 0.504); backward 0.816-0.819 -> 0.740-0.742 (eager 0.737-0.738).
#   - sqrt: degree 2 (30 pieces; the 17 pieces of degree 3 take a 135 KB lookup grid on the
#     GPU and ran 0.7 % slower than a copy, degree 2 0.4 % faster).
#   - the others: `--exact bf16 --exp-tails` (the smallest exact tables).
# --exp2-tails: every table `--exact bf16 --exp-tails` (the set before session 26, which the
#   lab scripts under bench/gpu_lab/ measured as ".gpu-tables").
# --cpu: the tables that run fastest in f32 on the CPU (default DIR .cpu-tables/; session 28,
#   bench/cpu_lab/NOTES.md): few uniform pieces of degree 6-12, which the AVX-512 kernel
#   looks up by register permutes (P <= 32), instead of the GPU set's 170-370 pieces of
#   degree 4 (row loads) or arbitrary breakpoints (a binary search per lane). Measured with
#   `cpu_lab --normal 4` in L1 on one Zen 4 core, cycles per 16 elements, GPU set -> CPU set:
#   gelu 55.6 -> 34.1, gelu_tanh 56.4 -> 38.9, silu 55.4 -> 29.5, sigmoid 48.8 -> 33.9,
#   tanh 33.8 -> 26.1, exp 54.4 -> 37.6, exp2 54.3 -> 35.5, softplus 53.3 -> 35.1, mish
#   56.1 -> 28.9, erf 37.4 -> 24.5, log_sigmoid 53.7 -> 36.8, hardswish 34.2 -> 18.2. The
#   other functions keep the GPU set's tables. Session 29:
#   sigmoid, exp, exp2, softplus and log_sigmoid on [-16, 16] with the exp2 tails at its ends (--exp-tails-at-ends: the pieces
#   cover the range, so N(0, 16) inputs rarely reach a tail; by default the tails took over
#   from about -7.5, or from ±0.13 for exp and exp2, and most vectors computed exp2):
#   sigmoid 33.9 -> 22.3, exp 35.8 -> 23.3, exp2 35.3 -> 21.4, softplus 35.3 -> 22.5,
#   log_sigmoid 37.2 -> 23.9; silu and mish at degree 6 on [-20, 10] (the linear tail from
#   10 is exact in bf16): silu 29.3 -> 24.5, mish 28.7 -> 24.4; gelu at degree 8 on [-11, 8]
#   with an exp2 tail below -11 (32 pieces of degree 10 on [-13.5, 8] before): 34.4 -> 30.2.
#   Session 30: reciprocal, rsqrt, sqrt and log on log breakpoints (`--breakpoints log`:
#   equal steps of f32 bit patterns, whose piece the AVX-512 kernel computes from the
#   input's bits instead of a binary search), 24 pieces each: reciprocal degree 4 37.5 ->
#   21.5, rsqrt degree 3 37.2 -> 19.5, sqrt degree 3 39.2 -> 24.4-24.7, log degree 5 41.5
#   -> 28.1. elu and selu on [-18, 0] only (their kink at 0 is the range's end; the
#   linear tail beyond it is exact), 17 and 15 uniform pieces of degree 5: 34.4 -> 23.7 and
#   34.2 -> 23.6 (the GPU set's 12 and 11 adaptive pieces of degree 3).
#   Session 39 (an Intel Xeon VM): gelu_tanh on [-9, 8] with an exp2 tail below -9, 31
#   pieces of degree 10, instead of 30 pieces of degree 12 on [-11, 8] with a constant -0
#   tail: the old table's leftmost pieces held subnormal coefficients (gelu_tanh is below
#   2^-126 from about -10.1), and Intel cores take a ~150-cycle microcode assist on every
#   vector FMA with a subnormal operand or result (Zen cores do not). `cpu_lab --normal 4`
#   in L1 on the Intel VM: 115.7 -> 42.7 cycles per 16 elements (bench/results/
#   cpu-2026-11-29-s39-intel-subnormals.md).
set -euo pipefail
cd "$(dirname "$0")/.."
exp2_only=0
cpu=0
if [ "${1:-}" = "--exp2-tails" ]; then
  exp2_only=1
  shift
elif [ "${1:-}" = "--cpu" ]; then
  cpu=1
  shift
fi
dir=${1:-$([ $cpu = 1 ] && echo .cpu-tables || echo .gpu-tables)}
cargo build --release -q -p pwpa-cli  # up to date in a second; a stale binary would fit other tables
pwpa=target/release/pwpa
mkdir -p "$dir"

# name|fit arguments|whole line: 1 = every finite bf16 input must be correctly rounded
fast_f32='gelu|--range=-13.5,8 -D 4 --breakpoints uniform|1
gelu_tanh|--range=-11,8 -D 4 --breakpoints uniform|1
silu|--range=-98,20 -D 4 --breakpoints uniform|1
mish|--range=-98,20 -D 4 --breakpoints uniform|1
exp|-D 4 --breakpoints uniform|1
exp2|-D 4 --breakpoints uniform|1
sigmoid|--range=-93,17 -D 4 --breakpoints uniform|1
softplus|--range=-93,17 -D 4 --breakpoints uniform|1
log_sigmoid|--range=-17,93 -D 4 --breakpoints uniform|1
sqrt|-D 2|0'
# The CPU set (--cpu): name|fit arguments|whole line, as above.
fast_cpu='gelu|--range=-11,8 -D 8 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
gelu_tanh|--range=-9,8 -D 10 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
silu|--range=-20,10 -D 6 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
sigmoid|--range=-16,16 -D 5 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
tanh|-D 6 --exp-tails --breakpoints uniform|1
exp|--range=-16,16 -D 6 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
exp2|--range=-16,16 -D 5 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
softplus|--range=-16,16 -D 5 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
mish|--range=-20,10 -D 6 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
erf|-D 6 --exp-tails --breakpoints uniform|1
log_sigmoid|--range=-16,16 -D 5 --exp-tails --exp-tails-at-ends --breakpoints uniform|1
hardswish|--range=-3,3 -D 2 --breakpoints uniform|1
elu|--range=-18,0 -D 5 --breakpoints uniform|1
selu|--range=-18,0 -D 5 --breakpoints uniform|1
reciprocal|-D 4 --breakpoints log|0
rsqrt|-D 3 --breakpoints log|0
sqrt|-D 3 --breakpoints log|0
log|-D 5 --breakpoints log|0'
all=(gelu gelu_tanh silu sigmoid tanh exp exp2 softplus mish elu selu erf log_sigmoid hardswish
  reciprocal rsqrt sqrt log)

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for name in "${all[@]}"; do
  args="--exp-tails"
  whole=0
  if [ $exp2_only = 0 ]; then
    line=$(grep "^$name|" <<<"$([ $cpu = 1 ] && echo "$fast_cpu" || echo "$fast_f32")" || true)
    if [ -n "$line" ]; then
      args=$(cut -d'|' -f2 <<<"$line")
      whole=$(cut -d'|' -f3 <<<"$line")
    fi
  fi
  # shellcheck disable=SC2086
  "$pwpa" fit "$name" --exact bf16 $args -o "$dir/$name.json" >"$log" 2>&1 || {
    cat "$log" >&2
    echo "fit_bench_tables: pwpa fit $name --exact bf16 $args failed" >&2
    exit 1
  }
  if [ "$whole" = 1 ] && ! grep -q "all finite: 100.0000% correctly rounded" "$log"; then
    grep "all finite" "$log" >&2 || true
    echo "fit_bench_tables: $name: not correctly rounded on every finite bf16 input" >&2
    exit 1
  fi
  printf '%-12s %s\n' "$name" "$(grep -E '^[a-z_0-9]+: [0-9]+ (pieces?|partitions) of degree' "$log" | head -1)"
done
echo "wrote ${#all[@]} tables to $dir"
