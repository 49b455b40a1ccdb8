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

# The same compile with NVRTC 13.0, the oldest CUDA 13 NVRTC (the GPU machines have it):
# newer NVRTCs accept code that 13.0 rejects (a lambda in device code, found on the device
# on 2026-11-22). Downloaded once from the package registry into .nvrtc-13.0/ (ignored by
# git); skipped, with a message, where it cannot be downloaded.
nv130=.nvrtc-13.0
if [ -n "$nvrtc" ]; then
  py="$(realpath -m "${PWPA_VENV:-.venv}")/bin/python"
  if [ ! -f "$nv130/nvidia/cu13/lib/libnvrtc.so.13" ]; then
    rm -rf "$nv130.tmp" && mkdir -p "$nv130.tmp"
    if "$py" -m pip download --quiet --no-deps --disable-pip-version-check -d "$nv130.tmp" \
        "nvidia-cuda-nvrtc==13.0.*" &&
      "$py" -m zipfile -e "$nv130.tmp"/nvidia_cuda_nvrtc-*.whl "$nv130.tmp/x"; then
      rm -rf "$nv130" && mv "$nv130.tmp/x" "$nv130"
    fi
    rm -rf "$nv130.tmp"
  fi
  if [ -f "$nv130/nvidia/cu13/lib/libnvrtc.so.13" ]; then
    step "NVRTC kernel compile test with NVRTC 13.0 (as on the GPU machines)"
    lib="$(realpath "$nv130/nvidia/cu13/lib")"
    LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PWPA_NVRTC="$lib/libnvrtc.so.13" \
      CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true cargo test -p pwpa-cuda --release --test nvrtc_compile
  else
    step "could not download NVRTC 13.0 (pip: nvidia-cuda-nvrtc==13.0.*): its compile test is skipped"
  fi
fi

step "all tests passed"
