#!/usr/bin/env bash
# Runs a command with SWITCHYARD_TEST_POSTGRES_URL pointing at a PostgreSQL.
# When the variable is already set, that database is used; otherwise a
# throwaway cluster is made in a temporary folder on a free port and removed
# afterwards.
set -euo pipefail

if [ -n "${SWITCHYARD_TEST_POSTGRES_URL:-}" ]; then
  exec "$@"
fi

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bin" ]; then
  echo "error: no PostgreSQL server found (run scripts/install-test-tools.sh)" >&2
  exit 1
fi
dir=$(mktemp -d /tmp/switchyard-pg.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  # PostgreSQL refuses to run as root.
  chown postgres "$dir"
  as_pg=(runuser -u postgres --)
fi
cleanup() {
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
echo "==> Starting a throwaway PostgreSQL on 127.0.0.1:$port"
"${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U switchyard -A trust --no-sync >/dev/null
"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start >/dev/null
export SWITCHYARD_TEST_POSTGRES_URL="postgres://switchyard@127.0.0.1:$port/postgres"
"$@"
