#!/usr/bin/env bash
# Every test of pwpa: formatting, clippy (warnings are errors), the Rust test suite
# of the whole workspace (release build: the exhaustive 16-bit sweeps need it), and
# the Python package's tests when bindings/python/test.sh exists.
# Needs only a Rust toolchain (rustup) and python3 (3.10+); no GPU (GPU tests skip).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

start=$SECONDS
step() { printf '\n==> [%4ds] %s\n' "$((SECONDS - start))" "$*"; }

command -v cargo >/dev/null || { echo "error: cargo not found; install Rust with rustup" >&2; exit 1; }
for comp in rustfmt clippy; do
  sub=${comp/rustfmt/fmt}
  if ! cargo "$sub" --version >/dev/null 2>&1; then
    step "installing the $comp component"
    rustup component add "$comp"
  fi
done

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

# The Python bindings are their own Cargo workspace (bindings/python).
step "bindings/python: cargo fmt --check, clippy -D warnings"
(cd bindings/python && cargo fmt --check && cargo clippy --all-targets -- -D warnings)

# Release for speed, with integer overflow checks kept on.
step "cargo test --workspace --release"
CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true cargo test --workspace --release

if [ -f bindings/python/test.sh ]; then
  step "bash bindings/python/test.sh"
  bash bindings/python/test.sh
else
  step "no bindings/python/test.sh in this checkout: skipping the Python tests"
fi

# The CUDA kernels compiled by NVRTC for sm_90 (every specialisation the host launches
# or a sample of them; fails on ptxas spills): no GPU needed, only NVRTC, which PyTorch's
# CUDA wheel in the Python tests' virtual environment brings.
nvrtc="$(ls "$(realpath -m "${PWPA_VENV:-.venv}")"/lib/python3*/site-packages/nvidia/cu*/lib/libnvrtc.so.* 2>/dev/null | grep -v builtins | head -1 || true)"
if [ -n "$nvrtc" ]; then
  step "NVRTC kernel compile test (NVRTC: $nvrtc)"
  PWPA_NVRTC="$nvrtc" CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true \
    cargo test -p pwpa-cuda --release --test nvrtc_compile
else
  step "no NVRTC in the Python virtual environment: the NVRTC kernel compile test ran as a skip above"
fi

step "all tests passed"
