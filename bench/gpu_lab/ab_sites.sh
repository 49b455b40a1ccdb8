# Sourced by the device-side A/B labs (fast_f32_ab.sh, bwd16_ab.sh): installs the newest
# CUDA wheel of .gpu/whl/ into /tmp/site-ab and, when there is one, the baseline wheel of
# .gpu/old/ into /tmp/site-ab-old (a setting's W=old), and prints the device.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
install_site() {  # site wheel
  mkdir -p "$1"
  python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --upgrade \
    --target "$1" "$2"
}
install_site /tmp/site-ab "$(ls -t .gpu/whl/pwpa-*.whl | head -1)"
if ls .gpu/old/pwpa-*.whl > /dev/null 2>&1; then
  install_site /tmp/site-ab-old "$(ls -t .gpu/old/pwpa-*.whl | head -1)"
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
