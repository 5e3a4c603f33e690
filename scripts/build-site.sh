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
# wasm-bindgen's own output, not served: the served copies carry a hash.
build=target/site-build
echo "==> Building the wasm bundle ($profile)"
cargo build --quiet -p frontend --lib --target wasm32-unknown-unknown \
  --target-dir target/front --profile "$cargo_profile"
wasm=target/front/wasm32-unknown-unknown/$out/frontend.wasm

mkdir -p "$pkg" "$build"
stamp=$build/.built-from
if [ ! -f "$build/switchyard_bg.wasm" ] || [ "$wasm" -nt "$build/switchyard_bg.wasm" ] \
  || [ "$(cat "$stamp" 2>/dev/null)" != "$profile" ]; then
  echo "==> wasm-bindgen"
  wasm-bindgen --target web --no-typescript --out-dir "$build" --out-name switchyard "$wasm"
  if [ "$profile" = release ]; then
    # npm's binaryen, not Debian's 108: that one corrupts the bundle.
    wasm_opt=target/tools/node_modules/.bin/wasm-opt
    if [ ! -x "$wasm_opt" ]; then
      echo "==> Installing wasm-opt (npm binaryen@132.0.0)"
      npm install --silent --no-audit --no-fund --prefix target/tools binaryen@132.0.0
    fi
    echo "==> wasm-opt -Oz"
    "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
      -o "$build/switchyard_bg.wasm" "$build/switchyard_bg.wasm"
  fi
  echo "$profile" > "$stamp"
fi
cp style/main.css "$build/switchyard.css"
cp -r public/. "$site/"

# Content-hashed names, so browsers may keep the files for good (the server
# sends them `immutable`) and a new build is a new name: one hash over the
# script, the module and the stylesheet, which the page links together.
# The server reads the name from pkg/name.txt (its HydrationScripts adds
# `.js` and `_bg.wasm`, the shell `.css`).
hash=$(cat "$build/switchyard.js" "$build/switchyard_bg.wasm" "$build/switchyard.css" | sha256sum | cut -c1-16)
name=switchyard.$hash
if [ "$(cat "$pkg/name.txt" 2>/dev/null)" != "$name" ] || [ ! -f "$pkg/$name.js" ]; then
  # The previous build's files (and their compressed copies) go.
  find "$pkg" -maxdepth 1 -name 'switchyard*' -delete
  cp "$build/switchyard.js" "$pkg/$name.js"
  cp "$build/switchyard_bg.wasm" "$pkg/${name}_bg.wasm"
  cp "$build/switchyard.css" "$pkg/$name.css"
  if [ -d "$build/snippets" ]; then cp -r "$build/snippets" "$pkg/"; fi
  echo "$name" > "$pkg/name.txt"
fi

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
module=$pkg/${name}_bg.wasm
sizes="$(du -h "$module" | cut -f1) wasm, $(du -h "$module.gz" | cut -f1) gzipped"
[ -f "$module.br" ] && sizes="$sizes, $(du -h "$module.br" | cut -f1) brotli"
echo "==> Site ready in $site as $name ($sizes)"
