#!/usr/bin/env bash
# Runs the Python tests on the GPU machine (Python >= 3.10, torch with CUDA, numpy;
# no network, no Rust). Installs a prebuilt abi3 wheel with --no-deps into a
# private directory and runs tests/test_gpu.py (plus the CPU suites with -a).
#
#   bash bindings/python/run_gpu_tests.sh [WHEEL] [-a] [pytest args...]
#
# WHEEL defaults to the newest .whl/pwpa-*.whl at the repository root (build it
# with bindings/python/build_gpu_wheel.sh, which also puts pytest's wheels there in
# case the device has no pytest). PWPA_REQUIRE_CUDA=1 is set: a wheel without CUDA
# support fails the GPU tests instead of skipping them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
py="${PYTHON:-python3}"
case "$py" in */*) py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")" ;; esac

wheel=""
if [ $# -gt 0 ] && [[ "$1" == *.whl ]]; then wheel="$1"; shift; fi
if [ -z "$wheel" ]; then
  wheel="$(ls -t "$root"/.whl/pwpa-*.whl 2>/dev/null | head -n1 || true)"
fi
if [ -z "$wheel" ] || [ ! -f "$wheel" ]; then
  echo "run_gpu_tests: no pwpa wheel (pass one, or put it in $root/.whl/)" >&2
  exit 2
fi
all=0
if [ $# -gt 0 ] && [ "$1" = "-a" ]; then all=1; shift; fi

site="$(mktemp -d /tmp/pwpa-site.XXXXXX)"
trap 'rm -rf "$site"' EXIT
"$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" "$wheel"
if ! "$py" -c "import pytest" 2>/dev/null; then
  shopt -s nullglob
  extra=("$root"/.whl/pytest-*.whl "$root"/.whl/pluggy-*.whl "$root"/.whl/iniconfig-*.whl "$root"/.whl/packaging-*.whl "$root"/.whl/exceptiongroup-*.whl "$root"/.whl/tomli-*.whl "$root"/.whl/pygments-*.whl)
  if [ ${#extra[@]} -eq 0 ]; then
    echo "run_gpu_tests: pytest is not installed and no pytest wheels are in $root/.whl/" >&2
    exit 2
  fi
  "$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --target "$site" "${extra[@]}"
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export PWPA_REQUIRE_CUDA=1
"$py" -c "import pwpa, torch; print('pwpa', pwpa.__version__, 'cuda compiled:', pwpa.cuda_compiled(), 'available:', pwpa.cuda_available(), '| torch', torch.__version__, 'cuda:', torch.cuda.is_available())"

cd "$here"
tests=(tests/test_gpu.py)
if [ "$all" -eq 1 ]; then tests=(tests); fi
set +e
"$py" -m pytest -q -p no:cacheprovider "${tests[@]}" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "run_gpu_tests: pytest collected no tests — treating as a failure" >&2
  exit 1
fi
exit "$rc"
