#!/usr/bin/env bash
# Builds the CUDA-enabled pwpa wheel into .whl/ at the repository root, for
# run_gpu_tests.sh on the device machine, and downloads pytest's wheels there too
# (the device machine has no network and may have no pytest).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mkdir -p "$root/.whl"
rm -f "$root"/.whl/pwpa-*.whl
venv="$(realpath -m "${PWPA_VENV:-$root/.venv}")"  # absolute: the scripts change directory
if [ ! -x "$venv/bin/maturin" ]; then
  [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.16,<2"
fi
(cd "$here" && "$venv/bin/maturin" build --release --features "${PWPA_FEATURES:-cuda}" --out "$root/.whl")
if ! ls "$root"/.whl/pytest-*.whl >/dev/null 2>&1; then
  "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
    --python-version 3.12 --dest "$root/.whl" pytest
fi
ls -l "$root/.whl"
