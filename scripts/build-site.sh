#!/usr/bin/env bash
# Builds the browser side of the site into target/site: the wasm bundle split
# into the main module and the lazily loaded pages (wasm-split-cli), through
# wasm-bindgen, the stylesheet and the public files, under content-hashed
# names. `debug` or `release`. This is what cargo-leptos does, without its
# 15-minute install.
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
# The split and wasm-bindgen's output, not served: the served copies carry a hash.
build=target/site-build
echo "==> Building the wasm bundle ($profile)"
wasm_target=target/front
# With relocations kept: wasm-split reads them to tell which code each
# lazily loaded page needs (only the final link takes the flag).
cargo rustc --quiet -p frontend --lib --target wasm32-unknown-unknown \
  --target-dir "$wasm_target" --profile "$cargo_profile" -- -C link-arg=--emit-relocs
wasm=$wasm_target/wasm32-unknown-unknown/$out/frontend.wasm
mkdir -p "$build"
cp style/main.css "$build/switchyard.css"
cp -r public/. "$site/"

# A folder named for the content, so browsers may keep every file in it for
# good (the server sends them `immutable`) and a new build is a new folder:
# switchyard-<hash of the module as linked and the stylesheet>/ holds
# switchyard.js, switchyard_bg.wasm, switchyard.css and the chunks of the
# lazily loaded pages with their loader (they find each other by relative
# paths). The server reads the folder's name from pkg/name.txt.
hash=$(cat "$wasm" "$build/switchyard.css" | sha256sum | cut -c1-16)
name=switchyard-$hash
mkdir -p "$pkg"
if [ "$(cat "$pkg/name.txt" 2>/dev/null)" != "$name" ] || [ ! -f "$pkg/$name/switchyard.js" ] \
  || [ "$(cat "$build/.built-from" 2>/dev/null)" != "$profile" ]; then
  split=$build/split
  rm -rf "$split"
  mkdir -p "$split"
  # The pages marked #[lazy_route] go to chunks of their own, loaded by
  # __wasm_split.js when a person first opens one; the main module keeps
  # what the triage view needs.
  echo "==> wasm-split"
  wasm-split-cli "$wasm" "$split" --out-name switchyard 2>"$build/wasm-split.log" \
    || { cat "$build/wasm-split.log" >&2; exit 1; }
  echo "==> wasm-bindgen"
  # The chunks' loader reads the main module's table and memory exports.
  wasm-bindgen --target web --no-typescript --keep-lld-exports --out-dir "$split" \
    --out-name switchyard "$split/switchyard.wasm"
  rm "$split/switchyard.wasm"
  if [ "$profile" = release ]; then
    # npm's binaryen, not Debian's 108: that one corrupts the bundle.
    wasm_opt=target/tools/node_modules/.bin/wasm-opt
    if [ ! -x "$wasm_opt" ]; then
      echo "==> Installing wasm-opt (npm binaryen@132.0.0)"
      npm install --silent --no-audit --no-fund --prefix target/tools binaryen@132.0.0
    fi
    echo "==> wasm-opt -Oz"
    for module in "$split"/*.wasm; do
      "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
        -o "$module" "$module"
    done
  fi
  cp "$build/switchyard.css" "$split/switchyard.css"
  # The previous builds go (this layout's folders and the flat files before it).
  find "$pkg" -mindepth 1 -maxdepth 1 \( -name 'switchyard*' -o -name 'split_*' \
    -o -name 'chunk_*' -o -name '__wasm_split*' -o -name '.built-from' \) -exec rm -rf {} +
  cp -r "$split" "$pkg/$name"
  echo "$profile" > "$build/.built-from"
  echo "$name" > "$pkg/name.txt"
fi

# Precompressed copies the server sends to browsers that accept them:
# brotli and gzip, from maintained libraries (the precompress crate), so
# every build has both. Only what changed is compressed again.
best=
[ "$profile" = release ] && best=--best
cargo run --quiet --release -p precompress -- $best "$pkg/$name"
module=$pkg/$name/switchyard_bg.wasm
sizes="$(du -h "$module" | cut -f1) wasm, $(du -h "$module.gz" | cut -f1) gzipped, $(du -h "$module.br" | cut -f1) brotli"
echo "==> Site ready in $site/pkg/$name ($sizes)"
