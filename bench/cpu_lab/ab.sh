#!/bin/bash
# In-process A/B of the CPU fast path: two builds of crates/pwpa in ONE binary, timed in
# interleaved rounds on one thread (this VM's speed drifts by up to 2x within minutes;
# separate runs of two binaries do not compare, interleaved rounds in one process do).
#
#   bash bench/cpu_lab/ab.sh [REV] -- [--n N] [--rounds R] [--normal SIGMA] [--dtype f32|bf16|f16]
#                                   [--parallel] TARGET...
#
# pwpa_old = crates/pwpa at git REV (default HEAD), pwpa_new = the working tree.
# TARGET: a table JSON or P:D[:uniform|arbitrary] (the criterion bench's tables).
# Prints min and median ns per element of each and their ratios, and flags any
# result that differs bitwise between the two. Scratch directory: $AB_DIR (/tmp/pwpa-ab).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REV=HEAD
if [ $# -gt 0 ] && [ "$1" != "--" ]; then REV=$1; shift; fi
[ "${1:-}" = "--" ] && shift
D=${AB_DIR:-/tmp/pwpa-ab}
mk() { # dir package-name
  cat > "$1/Cargo.toml" <<T
[package]
name = "$2"
version = "0.1.0"
edition = "2021"
[dependencies]
$(sed -n '/^\[dependencies\]/,/^\[/p' "$ROOT/crates/pwpa/Cargo.toml" | grep -v '^\[' | grep -v '^$' \
  | sed -e 's/^half.workspace = true/half = { version = "2.7", features = ["serde"] }/' \
        -e 's/^serde.workspace = true/serde = { version = "1", features = ["derive"] }/' \
        -e 's/^serde_json.workspace = true/serde_json = { version = "1", features = ["float_roundtrip"] }/' \
        -e 's/^thiserror.workspace = true/thiserror = "2"/' \
        -e 's/^rayon.workspace = true/rayon = "1.10"/')
T
}
rm -rf "$D/old" "$D/new" "$D/lab"; mkdir -p "$D/old" "$D/new"
git -C "$ROOT" archive "$REV" crates/pwpa/src crates/pwpa/assets | tar -x -C "$D/old" --strip-components=2
cp -r "$ROOT/crates/pwpa/src" "$ROOT/crates/pwpa/assets" "$D/new/"
mk "$D/old" pwpa_old; mk "$D/new" pwpa_new
cp -r "$ROOT/bench/cpu_lab/ab" "$D/lab"
cp "$ROOT/crates/pwpa/benches/common/lab.rs" "$D/lab/src/lab.rs"
(cd "$D/lab" && CARGO_TARGET_DIR="$D/target" cargo build --release --quiet)
"$D/target/release/lab" "$@"
