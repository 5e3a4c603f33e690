#!/usr/bin/env bash
# Builds the browser side of the site into target/site: the wasm bundle through
# wasm-bindgen, the stylesheet and the public files. `debug` or `release`.
# This is what cargo-leptos does, without its 15-minute install.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${1:-debug}
case "$profile" in
  debug) cargo_profile=dev; out=debug ;;
  release) cargo_profile=wasm-release; out=wasm-release ;;
  *) echo "usage: $0 debug|release" >&2; exit 2 ;;
esac

site=target/site
pkg=$site/pkg
echo "==> Building the wasm bundle ($profile)"
cargo build --quiet -p frontend --lib --target wasm32-unknown-unknown \
  --target-dir target/front --profile "$cargo_profile"
wasm=target/front/wasm32-unknown-unknown/$out/frontend.wasm

mkdir -p "$pkg"
stamp=$pkg/.built-from
if [ ! -f "$pkg/switchyard_bg.wasm" ] || [ "$wasm" -nt "$pkg/switchyard_bg.wasm" ] \
  || [ "$(cat "$stamp" 2>/dev/null)" != "$profile" ]; then
  echo "==> wasm-bindgen"
  # The server is built without LEPTOS_OUTPUT_NAME, so it links
  # pkg/switchyard.js and pkg/switchyard_bg.wasm: wasm-bindgen's own names.
  wasm-bindgen --target web --no-typescript --out-dir "$pkg" --out-name switchyard "$wasm"
  if [ "$profile" = release ] && command -v wasm-opt >/dev/null 2>&1; then
    wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
      -o "$pkg/switchyard_bg.wasm" "$pkg/switchyard_bg.wasm"
  fi
  echo "$profile" > "$stamp"
fi
cp style/main.css "$pkg/switchyard.css"
cp -r public/. "$site/"
echo "==> Site ready in $site ($(du -h "$pkg/switchyard_bg.wasm" | cut -f1) wasm)"
