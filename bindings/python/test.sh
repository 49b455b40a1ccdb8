#!/usr/bin/env bash
# Python tests of pwpa (CPU): creates/uses .venv at the repository root, installs
# maturin, numpy, pytest and torch from PyPI when missing, builds and installs the
# wheel (install.sh), runs pytest. pip keeps no cache (--no-cache-dir): torch's
# wheels would otherwise take another ~3 GB of disk. Exit status: pytest's, except
# that "no tests collected" (5) is a failure too. Extra arguments go to pytest.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$(realpath -m "${PWPA_VENV:-$root/.venv}")"  # absolute: the scripts change directory
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
  # torch from PyPI brings CUDA libraries: about 5.5 GB installed. Say so plainly
  # rather than let pip fail half way with "No space left on device".
  need_kb=$((6 * 1024 * 1024))
  avail_kb="$(df -Pk "$venv" | awk 'NR==2 {print $4}')"
  if [[ " ${missing[*]} " == *" torch "* ]] && [ "${avail_kb:-0}" -lt "$need_kb" ]; then
    echo "pwpa tests: error: installing torch into $venv needs about 6 GB free on its file system; $((avail_kb / 1024)) MB free" >&2
    exit 1
  fi
  echo "pwpa tests: installing ${missing[*]} into $venv"
  pkgs=()
  for m in "${missing[@]}"; do
    case "$m" in maturin) pkgs+=("maturin>=1.16,<2") ;; *) pkgs+=("$m") ;; esac
  done
  "$vpy" -m pip install --quiet --disable-pip-version-check --no-cache-dir "${pkgs[@]}"
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
