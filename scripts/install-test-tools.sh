#!/usr/bin/env bash
# Installs what the tests need and is missing: Debian's Chromium, a PostgreSQL
# server, and the end2end npm packages (Playwright never downloads a browser).
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium fonts-liberation)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> Installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -d end2end/node_modules/@playwright/test ] \
  || [ end2end/package-lock.json -nt end2end/node_modules/.package-lock.json ]; then
  echo "==> Installing the end2end npm packages"
  (cd end2end && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
echo "==> Test tools ready: $(/usr/bin/chromium --version 2>/dev/null | tail -n 1), PostgreSQL $(ls /usr/lib/postgresql | sort -V | tail -n 1)"
