#!/usr/bin/env bash
# pwpa's main job on a fresh machine:
#   1. build the release `pwpa` CLI (target/release/pwpa),
#   2. install the Python package into .venv (bindings/python/install.sh, when present),
#   3. run a demo: fit GELU with the default settings, print the error report,
#      evaluate a small .npy and compare with the f64 reference.
# Needs only a Rust toolchain (rustup) and python3 (3.10+).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

step() { printf '\n==> %s\n' "$*"; }

command -v cargo >/dev/null || { echo "error: cargo not found; install Rust with rustup" >&2; exit 1; }
command -v python3 >/dev/null || { echo "error: python3 not found" >&2; exit 1; }

step "building the pwpa CLI (release)"
cargo build --release -p pwpa-cli
pwpa="$root/target/release/pwpa"
"$pwpa" --version

if [ -f bindings/python/install.sh ]; then
  step "installing the Python package into .venv (bindings/python/install.sh)"
  bash bindings/python/install.sh
else
  step "no bindings/python/install.sh in this checkout: skipping the Python package"
fi

demo="$root/target/demo"
mkdir -p "$demo"
step "demo: pwpa fit gelu -o $demo/gelu.json"
"$pwpa" fit gelu -o "$demo/gelu.json"

step "demo: pwpa info $demo/gelu.json"
"$pwpa" info "$demo/gelu.json" --no-report

step "demo: pwpa eval on a small .npy"
# A tiny float32 .npy written with the standard library only (no numpy needed).
python3 - "$demo/x.npy" <<'PY'
import struct, sys
xs = [-10.0, -4.0, -2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5, 4.0, 10.0, float("nan"), float("inf")]
h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(xs)
h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%df" % len(xs), *xs))
PY
"$pwpa" eval "$demo/gelu.json" --input "$demo/x.npy" --output "$demo/y.npy"
python3 - "$demo/x.npy" "$demo/y.npy" <<'PY'
import math, struct, sys
def load(p):
    b = open(p, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0]
    d = b[10 + hl:]
    return struct.unpack("<%df" % (len(d) // 4), d)
xs, ys = load(sys.argv[1]), load(sys.argv[2])
print("%12s %16s %16s %10s" % ("x", "table(x)", "gelu(x) (f64)", "abs err"))
for x, y in zip(xs, ys):
    ref = x * 0.5 * (1 + math.erf(x / math.sqrt(2))) if math.isfinite(x) else (x if x > 0 else float("nan"))
    err = 0.0 if y == ref else (abs(y - ref) if math.isfinite(ref) and math.isfinite(y) else float("nan"))
    print("%12g %16.9g %16.9g %10.3g" % (x, y, ref, err))
PY

step "done: the CLI is $pwpa (try '$pwpa --help')"
