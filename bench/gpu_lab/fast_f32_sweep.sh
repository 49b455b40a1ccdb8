#!/bin/bash
# Device-side lab (session 29): the sweep's f32 table shapes, one `pwpa bench` each, under
# each setting of $SETTINGS (comma-separated VAR=value lists; A=1 is the default), rounds
# interleaved. Prints "setting shape fraction-of-copy". .gpu carried.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
SHAPES=${SHAPES:-"256:3 1024:3 1024:5 64:1 4096:5 4096:8 1024:8"}
for r in $(seq ${ROUNDS:-1}); do
  for k in uniform arbitrary; do
    for s in ${SHAPES}; do
      for e in ${SETTINGS:-A=1}; do
        f=$(env ${e//,/ } timeout 60 .gpu/pwpa bench random:$s:$k --device cuda --repeats 9 --json 2>&1 |
          python3 -c 'import sys,json; d=json.load(sys.stdin); print(" ".join("%.3f" % r["fraction_of_copy"] for r in d["rows"] if r.get("kernel") == "pwpa"))' 2>&1 | tail -1)
        echo "$e $k P:D=$s $f"
      done
    done
  done
done
