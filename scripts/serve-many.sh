#!/usr/bin/env bash
# Starts N `switchyard serve` processes on one PostgreSQL database, on ports
# 3000, 3001, ... (N defaults to 3). Put any load balancer in front: nothing
# is sticky. Ctrl-C stops them all; each hands its running work over.
#
#   DATABASE_URL=postgres://user:password@host/db ./scripts/serve-many.sh 3 [serve options...]
#
# Logs go to target/serve-many/process-K.log. The build is the release one
# when it exists (make build), else the debug one (make run builds it).
set -euo pipefail

n=${1:-3}
shift || true
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: the first argument is how many processes to start (a number), not '$n'" >&2
  exit 2
fi
case "${DATABASE_URL:-}" in
  postgres://*|postgresql://*) ;;
  *)
    echo "error: set DATABASE_URL to a postgres:// URL; SQLite is for one process" >&2
    exit 2
    ;;
esac
cd "$(dirname "$0")/.."
bin=target/release/switchyard
[ -x "$bin" ] || bin=target/debug/switchyard
if [ ! -x "$bin" ]; then
  echo "error: no switchyard build; run make build (or make run once) first" >&2
  exit 2
fi
mkdir -p target/serve-many
pids=()
stop() {
  trap - INT TERM EXIT
  echo "==> Stopping ${#pids[@]} processes (each hands its work over)"
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
}
trap stop INT TERM EXIT
# The first process applies any pending migration before the others start.
for ((k = 0; k < n; k++)); do
  port=$((3000 + k))
  log=target/serve-many/process-$k.log
  "$bin" serve --addr "127.0.0.1:$port" "$@" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do
    grep -q "serving on" "$log" && break
    if ! kill -0 "${pids[-1]}" 2>/dev/null; then
      echo "error: process $k stopped; see $log" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "==> Process $k serving on http://127.0.0.1:$port/ (log: $log)"
done
wait
