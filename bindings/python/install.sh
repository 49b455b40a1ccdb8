#!/usr/bin/env bash
# Builds the pwpa wheel (PyO3 abi3, Python >= 3.10) with maturin and installs it,
# with numpy, into the virtual environment .venv at the repository root.
# Idempotent: re-running rebuilds incrementally and reinstalls.
#   PWPA_FEATURES=...                                    # cargo features (default: the crate's, CUDA included)
#   PWPA_WHEEL_DIR=dir                                    # where the wheel goes (default target/wheels)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$(realpath -m "${PWPA_VENV:-$root/.venv}")"  # absolute: the scripts change directory
py="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  echo "pwpa: creating $venv"
  "$py" -m venv "$venv"
fi
vpy="$venv/bin/python"
if ! "$vpy" -c "import maturin, numpy" 2>/dev/null; then
  "$vpy" -m pip install --quiet --disable-pip-version-check --no-cache-dir "maturin>=1.16,<2" numpy
fi

wheels="${PWPA_WHEEL_DIR:-$here/target/wheels}"
features=()
if [ -n "${PWPA_FEATURES:-}" ]; then features=(--features "$PWPA_FEATURES"); fi
rm -f "$wheels"/pwpa-*.whl
(cd "$here" && "$venv/bin/maturin" build --release --interpreter "$vpy" --out "$wheels" "${features[@]}")
wheel="$(ls -t "$wheels"/pwpa-*.whl | head -n1)"
"$vpy" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
"$vpy" -c "import pwpa; print('pwpa', pwpa.__version__, 'installed in $venv', '(cuda compiled)' if pwpa.cuda_compiled() else '(no cuda)')"
