#!/usr/bin/env bash
# What PostgreSQL's triggers that keep the records view's numbers cost a
# fire, measured inside the database (no client, no network): a fresh
# database with every migration, 300 records, then 1,500 fires' writes
# (a fire, its attempt, three items, their sightings, the attempt's and
# the fire's end) in one PL/pgSQL loop, with every trigger and with the
# kept numbers' triggers switched off. Prints microseconds per fire.
#
#   ./scripts/with-postgres.sh ./scripts/bench-kept-counts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
admin=${SWITCHYARD_TEST_POSTGRES_URL:?run it under scripts/with-postgres.sh}
base=${admin%/*}

fires() {
  psql "$1" -qAt <<'SQL' 2>&1 | grep -o '[0-9]* us per fire'
DO $$
DECLARE started timestamptz := clock_timestamp(); rec bigint; fid bigint; hid bigint;
BEGIN
  FOR n IN 1..1500 LOOP
    rec := (n % 300) + 1;
    INSERT INTO fires (record_id, pack_id, intent, triggered_by, actor, status, started_at)
    VALUES (rec, 'web', 'search.web', 'person', 'ana', 'running', n) RETURNING id INTO fid;
    INSERT INTO connector_history (fire_id, record_id, pack_id, intent, connector_id, triggered_by, actor, fired_at)
    VALUES (fid, rec, 'web', 'search.web', 'zero', 'person', 'ana', n) RETURNING id INTO hid;
    INSERT INTO items (record_id, intent, url, url_key, title, snippet, first_seen_at)
    SELECT rec, 'search.web', 'u' || k, 'k' || k || '-' || rec, 't', 's', n FROM generate_series(0, 2) k
    ON CONFLICT (record_id, intent, url_key) DO NOTHING;
    INSERT INTO item_evidence (item_id, fire_id, connector_id, triggered_by, found_at)
    SELECT id, fid, 'zero', 'person', n FROM items WHERE record_id = rec AND intent = 'search.web';
    UPDATE connector_history SET outcome = 'found', finished_at = n, result_count = 3 WHERE id = hid;
    UPDATE fires SET status = 'done', finished_at = n WHERE id = fid;
  END LOOP;
  RAISE NOTICE '% us per fire', round(extract(epoch FROM clock_timestamp() - started) * 1e6 / 1500);
END $$;
SQL
}

for variant in "every trigger" "without the kept numbers' triggers"; do
  db="kept_counts_$RANDOM$RANDOM"
  psql "$admin" -qc "CREATE DATABASE $db"
  url="$base/$db"
  for migration in engine/migrations/postgres/*.sql; do
    psql "$url" -q -v ON_ERROR_STOP=1 -f "$migration" >/dev/null 2>&1
  done
  psql "$url" -qc "INSERT INTO record_sets (name, bundle_id, created_at) VALUES ('bench', 'b', 0);
    INSERT INTO records (record_set_id, position, name)
    SELECT 1, g, 'Company ' || g FROM generate_series(0, 299) g;"
  if [ "$variant" != "every trigger" ]; then
    psql "$url" -qc "ALTER TABLE items DISABLE TRIGGER USER;
      ALTER TABLE connector_history DISABLE TRIGGER USER;
      ALTER TABLE item_evidence DISABLE TRIGGER USER;"
  fi
  for run in 1 2 3; do
    echo "$variant, run $run: $(fires "$url")"
  done
  psql "$admin" -qc "DROP DATABASE $db"
done
