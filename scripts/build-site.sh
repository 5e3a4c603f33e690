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
  if [ "$profile" = release ]; then
    # npm's binaryen, not Debian's 108: that one corrupts the bundle.
    wasm_opt=target/tools/node_modules/.bin/wasm-opt
    if [ ! -x "$wasm_opt" ]; then
      echo "==> Installing wasm-opt (npm binaryen@132.0.0)"
      npm install --silent --no-audit --no-fund --prefix target/tools binaryen@132.0.0
    fi
    echo "==> wasm-opt -Oz"
    "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
      -o "$pkg/switchyard_bg.wasm" "$pkg/switchyard_bg.wasm"
  fi
  echo "$profile" > "$stamp"
fi
cp style/main.css "$pkg/switchyard.css"
cp -r public/. "$site/"

# Precompressed copies the server sends to browsers that accept them:
# gzip always, brotli when its tool is installed (make test installs it).
# Only what changed is compressed again.
level=5
[ "$profile" = release ] && level=11
for f in "$pkg"/*.wasm "$pkg"/*.js "$pkg"/*.css; do
  if [ ! -f "$f.gz" ] || [ "$f" -nt "$f.gz" ]; then
    gzip -9 -k -f -n "$f"
  fi
  if command -v brotli >/dev/null && { [ ! -f "$f.br" ] || [ "$f" -nt "$f.br" ]; }; then
    brotli -q "$level" -k -f "$f"
  fi
done
sizes="$(du -h "$pkg/switchyard_bg.wasm" | cut -f1) wasm, $(du -h "$pkg/switchyard_bg.wasm.gz" | cut -f1) gzipped"
[ -f "$pkg/switchyard_bg.wasm.br" ] && sizes="$sizes, $(du -h "$pkg/switchyard_bg.wasm.br" | cut -f1) brotli"
echo "==> Site ready in $site ($sizes)"
