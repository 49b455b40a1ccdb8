#!/bin/bash
# Device-side A/B of two builds in one run (session 20): .gpu/old/ (a `pwpa` binary and a pwpa
# wheel of the baseline) against .gpu/ (pwpa and .gpu/whl of the working tree). Interleaved
# rounds of (1) bench/torch_bench.py f32 rows (--no-compile) and (2) `pwpa bench` of the
# sweep's f32 shapes (random tables, uniform inputs) for both builds.
# Env: ROUNDS (2), FUNCS (torch_bench --functions; all when unset), NO_TORCH (skip it), SHAPES,
# SHAPE_N (2^26), DTYPES (f32), NEW2_ENV ("VAR=value ...": the new wheel once more with it),
# NO_SHAPES (skip the shapes).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for w in old new; do
  d=/tmp/site-$w; mkdir -p $d
  whl=$([ $w = old ] && ls .gpu/old/pwpa-*.whl || ls -t .gpu/whl/pwpa-*.whl | head -1)
  python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target $d $whl
done
SHAPES=${SHAPES:-"256:3:uniform 1024:3:uniform 1024:5:uniform 64:1:uniform 4096:5:uniform 4096:8:uniform 1024:8:uniform 256:3:arbitrary 1024:3:arbitrary 1024:5:arbitrary 64:1:arbitrary 4096:5:arbitrary 4096:8:arbitrary 1024:8:arbitrary"}
for r in $(seq ${ROUNDS:-2}); do
  for w in old new new2; do
    [ -n "${NO_TORCH:-}" ] && continue
    [ $w = new2 ] && [ -z "${NEW2_ENV:-}" ] && continue
    site=/tmp/site-${w%2}
    echo "=== torch_bench $w${NEW2_ENV:+ ($([ $w = new2 ] && echo $NEW2_ENV))} round $r"
    env ${NEW2_ENV:+$([ $w = new2 ] && echo $NEW2_ENV)} PYTHONPATH=$site python3 bench/torch_bench.py --device cuda --reps 10 --tables .gpu-tables \
      --dtypes ${DTYPES:-f32} --no-compile ${FUNCS:+--functions $FUNCS} --out /tmp/tb-$w-$r 2>&1 |
      awk '/^\[/ {f = $1; next} /copy/ {print f, $0}'
  done
  for w in old new; do
    [ -n "${NO_SHAPES:-}" ] && continue
    b=$([ $w = old ] && echo .gpu/old/pwpa || echo .gpu/pwpa)
    echo "=== sweep shapes $w round $r"
    for s in $SHAPES; do
      printf "%s %s " $w $s
      out=$($b bench random:$s --device cuda -n ${SHAPE_N:-67108864} --repeats 15 2>&1)
      echo "$out" | grep -E "^\| pwpa" | awk -F'|' '{printf "ms %s copy %s fraction %s ", $9, $10, $12}'
      echo "$out" | grep -E "^pwpa:" | grep -oE "tiles per [^,;)]*" | head -1
    done
  done
done
