-- What a whole set adds up to (its facets: records per filter, chips per
-- intent and state, each connector's finds, items triaged or not), kept
-- per set so reading it takes the same time for 100 records as for
-- 100,000. Each change of what a record keeps (migrations 0028, 0029,
-- 0031) moves its set's numbers, by triggers: on PostgreSQL they append
-- the change for a fold (migration 0034), so that fires of one set never
-- wait for each other on the same rows.
--
-- tally: 'items', 'new_items' (sums over the set's records); 'unreviewed',
-- 'nothing_found', 'errors' (records each filter shows); 'chip:<state>'
-- per intent (subject); 'finds', 'untriaged', 'single' per connector
-- (subject; as in Store::connector_facets).
CREATE TABLE set_tallies (
    record_set_id  BIGINT NOT NULL REFERENCES record_sets(id) ON DELETE CASCADE,
    tally          TEXT   NOT NULL,
    subject        TEXT   NOT NULL,
    n              BIGINT NOT NULL,
    PRIMARY KEY (record_set_id, tally, subject)
);

-- The records the errors filter shows: those with a chip whose attempts
-- failed and found nothing, kept on the record like its other counts.
ALTER TABLE records ADD COLUMN failing_chips BIGINT NOT NULL DEFAULT 0;
UPDATE records r SET failing_chips = f.n
FROM (SELECT record_id, COUNT(*) AS n FROM chip_facts WHERE failed > 0 AND items = 0
      GROUP BY record_id) f
WHERE f.record_id = r.id;
CREATE INDEX records_failing ON records(record_set_id, position) WHERE failing_chips > 0;

-- What the errors filter read before: nobody reads it now.
DROP INDEX records_failed;
CREATE OR REPLACE FUNCTION count_record_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    not_found INT := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        not_found := not_found - (OLD.outcome IS NOT DISTINCT FROM 'not_found')::int;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        not_found := not_found + (NEW.outcome IS NOT DISTINCT FROM 'not_found')::int;
    END IF;
    IF not_found <> 0 THEN
        UPDATE records SET not_found_attempts = not_found_attempts + not_found
        WHERE id = COALESCE(NEW.record_id, OLD.record_id);
    END IF;
    RETURN NULL;
END $$;
ALTER TABLE records DROP COLUMN failed_attempts;

INSERT INTO set_tallies (record_set_id, tally, subject, n)
SELECT record_set_id, t, '', n FROM (
    SELECT record_set_id, 'items' AS t, SUM(items_count) AS n FROM records GROUP BY record_set_id
    UNION ALL SELECT record_set_id, 'new_items', SUM(new_items) FROM records GROUP BY record_set_id
    UNION ALL SELECT record_set_id, 'unreviewed', COUNT(*) FILTER (WHERE new_items > 0)
        FROM records GROUP BY record_set_id
    UNION ALL SELECT record_set_id, 'nothing_found',
        COUNT(*) FILTER (WHERE items_count = 0 AND not_found_attempts > 0)
        FROM records GROUP BY record_set_id
    UNION ALL SELECT record_set_id, 'errors', COUNT(*) FILTER (WHERE failing_chips > 0)
        FROM records GROUP BY record_set_id
) s WHERE n <> 0;

INSERT INTO set_tallies (record_set_id, tally, subject, n)
SELECT record_set_id, 'chip:' || state, intent, COUNT(*) FROM chip_facts
WHERE state IS NOT NULL GROUP BY record_set_id, state, intent;

INSERT INTO set_tallies (record_set_id, tally, subject, n)
SELECT record_set_id, t, connector_id, n FROM (
    SELECT record_set_id, connector_id, 'finds' AS t, SUM(items) AS n FROM connector_finds
        GROUP BY record_set_id, connector_id
    UNION ALL SELECT record_set_id, connector_id, 'untriaged', SUM(untriaged) FROM connector_finds
        GROUP BY record_set_id, connector_id
    UNION ALL SELECT record_set_id, connector_id, 'single',
        COUNT(*) FILTER (WHERE items = 1 AND untriaged = 1)
        FROM connector_finds GROUP BY record_set_id, connector_id
) s WHERE n <> 0;
