#!/usr/bin/env bash
# Builds the adapter components (SPEC §7): wasm32-unknown-unknown core modules
# with wit-bindgen, componentized by ./componentize (wit-component), which
# refuses any import. Writes $CARGO_TARGET_DIR/components/{passthrough,infersharp}.wasm
# (<repo>/target/components without CARGO_TARGET_DIR)
# and the WASI preview-2 command fixture wasi-hello.wasm
# (or $COMPONENTS_OUT). Honours $CARGO_TARGET_DIR.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
target="${CARGO_TARGET_DIR:-$here/target}"
out="${COMPONENTS_OUT:-${CARGO_TARGET_DIR:-$root/target}/components}"
manifest="$here/Cargo.toml"

if command -v rustup >/dev/null 2>&1; then
  for t in wasm32-unknown-unknown wasm32-wasip2; do
    rustup target list --installed | grep -qx "$t" || rustup target add "$t"
  done
fi
cargo build --release --target wasm32-unknown-unknown --manifest-path "$manifest" \
  --target-dir "$target" -p sandboy-adapter-passthrough -p sandboy-adapter-infersharp
cargo build --manifest-path "$manifest" --target-dir "$target" -p componentize
mkdir -p "$out"
for name in passthrough infersharp; do
  "$target/$(rustc -vV | sed -n 's/^host: //p')/debug/componentize" \
    "$target/wasm32-unknown-unknown/release/sandboy_adapter_${name}.wasm" \
    "$out/${name}.wasm"
done
# The WASI preview-2 command fixture: std on wasm32-wasip2 is already a
# component (wasm-component-ld), importing WASI and exporting wasi:cli/run.
cargo build --release --target wasm32-wasip2 --manifest-path "$manifest" \
  --target-dir "$target" -p sandboy-wasi-hello
cp "$target/wasm32-wasip2/release/wasi-hello.wasm" "$out/wasi-hello.wasm"
