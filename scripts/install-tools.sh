#!/usr/bin/env bash
# Installs what a build needs and is missing: the wasm32 target, the
# wasm-bindgen CLI at exactly the version Cargo.lock pins, and the wasm-split
# CLI that cuts the lazily loaded pages out of the main module. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "==> Installing the Rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$want" ]; then
  echo "error: Cargo.lock names no wasm-bindgen version" >&2
  exit 1
fi
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$have" != "$want" ]; then
  # `cargo install wasm-bindgen-cli --locked` fails on this toolchain: its lock
  # pins webpki-roots 1.0.11, which the index no longer serves. Take the
  # published source through cargo itself, move that one pin, install from it.
  echo "==> Installing wasm-bindgen-cli $want (found: ${have:-none}); about 3 minutes"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/fetch/src"
  printf '[package]\nname = "fetch-wasm-bindgen-cli"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nwasm-bindgen-cli = "=%s"\n' "$want" > "$work/fetch/Cargo.toml"
  echo 'fn main() {}' > "$work/fetch/src/main.rs"
  (cd "$work/fetch" && cargo fetch --quiet)
  src=$(cd "$work/fetch" && cargo metadata --format-version 1 \
    | python3 -c 'import json,sys; m=json.load(sys.stdin); print(next(p["manifest_path"] for p in m["packages"] if p["name"]=="wasm-bindgen-cli"))')
  cp -r "$(dirname "$src")" "$work/cli"
  (cd "$work/cli" \
    && if grep -q 'name = "webpki-roots"' Cargo.lock; then cargo update --quiet -p webpki-roots --precise 1.0.10; fi \
    && cargo install --quiet --path . --locked --force)
fi
# The splitter reads a version section the wasm_split_helpers crate (through
# Leptos) writes; this release reads the one Cargo.lock's helpers write.
split_version=0.2.4
if ! cargo install --list | grep -qx "wasm_split_cli_support v$split_version:"; then
  echo "==> Installing wasm-split-cli $split_version; about 5 minutes"
  cargo install --quiet --locked --force "wasm_split_cli_support@$split_version" --features build-binary
fi
echo "==> Build tools ready: $(wasm-bindgen --version), wasm-split-cli $split_version"
