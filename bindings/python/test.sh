#!/usr/bin/env bash
# Python tests of pwpa (CPU): creates/uses .venv at the repository root, installs
# maturin, numpy, pytest and torch from PyPI when missing, builds and installs the
# wheel (install.sh), runs pytest. Exit status: pytest's, except that "no tests
# collected" (5) is a failure too. Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${PWPA_VENV:-$root/.venv}"
py="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
vpy="$venv/bin/python"
missing=()
for mod in maturin numpy pytest torch ml_dtypes; do
  "$vpy" -c "import $mod" 2>/dev/null || missing+=("$mod")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "pwpa tests: installing ${missing[*]} into $venv"
  pkgs=()
  for m in "${missing[@]}"; do
    case "$m" in maturin) pkgs+=("maturin>=1.16,<2") ;; *) pkgs+=("$m") ;; esac
  done
  "$vpy" -m pip install --quiet --disable-pip-version-check "${pkgs[@]}"
fi

PWPA_VENV="$venv" bash "$here/install.sh"

cd "$here"
set +e
"$vpy" -m pytest -q -p no:cacheprovider tests "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pwpa tests: pytest collected no tests — treating as a failure" >&2
  exit 1
fi
exit "$rc"
