#!/usr/bin/env bash
# Builds the adapter components (SPEC §7): wasm32-unknown-unknown core modules
# with wit-bindgen, componentized by ./componentize (wit-component), which
# refuses any import. Writes <repo>/target/components/{passthrough,infersharp}.wasm
# (or $COMPONENTS_OUT). Honours $CARGO_TARGET_DIR.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
target="${CARGO_TARGET_DIR:-$here/target}"
out="${COMPONENTS_OUT:-$root/target/components}"
manifest="$here/Cargo.toml"

if command -v rustup >/dev/null 2>&1; then
  rustup target list --installed | grep -qx wasm32-unknown-unknown \
    || rustup target add wasm32-unknown-unknown
fi
cargo build --release --target wasm32-unknown-unknown --manifest-path "$manifest" \
  --target-dir "$target" -p sandboy-adapter-passthrough -p sandboy-adapter-infersharp
cargo build --manifest-path "$manifest" --target-dir "$target" -p componentize
mkdir -p "$out"
for name in passthrough infersharp; do
  "$target/debug/componentize" \
    "$target/wasm32-unknown-unknown/release/sandboy_adapter_${name}.wasm" \
    "$out/${name}.wasm"
done
