-- What the records view filters by, kept on each record as its items and
-- attempts change (by triggers, so every writer keeps them): a filter then
-- reads an index of the records that match, not every record's items and
-- history.
ALTER TABLE records
    ADD COLUMN items_count BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN new_items BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN not_found_attempts BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN failed_attempts BIGINT NOT NULL DEFAULT 0,
    -- When its newest item was first seen (items are never deleted but
    -- with their record).
    ADD COLUMN last_found_at BIGINT;

UPDATE records r SET items_count = c.items, new_items = c.new_items, last_found_at = c.last_found_at
FROM (SELECT record_id, COUNT(*) AS items, COUNT(*) FILTER (WHERE state = 'new') AS new_items,
             MAX(first_seen_at) AS last_found_at
      FROM items GROUP BY record_id) c
WHERE c.record_id = r.id;

UPDATE records r SET not_found_attempts = c.not_found, failed_attempts = c.failed
FROM (SELECT record_id,
             COUNT(*) FILTER (WHERE outcome = 'not_found') AS not_found,
             COUNT(*) FILTER (WHERE outcome IN ('error', 'unknown', 'rate_limited')) AS failed
      FROM connector_history GROUP BY record_id) c
WHERE c.record_id = r.id;

CREATE FUNCTION count_record_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE records SET items_count = items_count + 1,
            new_items = new_items + (NEW.state = 'new')::int,
            last_found_at = GREATEST(COALESCE(last_found_at, NEW.first_seen_at), NEW.first_seen_at)
        WHERE id = NEW.record_id;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE records SET items_count = items_count - 1,
            new_items = new_items - (OLD.state = 'new')::int
        WHERE id = OLD.record_id;
    ELSIF (OLD.state = 'new') <> (NEW.state = 'new') THEN
        UPDATE records SET new_items = new_items + (NEW.state = 'new')::int - (OLD.state = 'new')::int
        WHERE id = NEW.record_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER items_counted AFTER INSERT OR DELETE OR UPDATE OF state ON items
FOR EACH ROW EXECUTE FUNCTION count_record_items();

CREATE FUNCTION count_record_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    not_found INT := 0;
    failed INT := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        not_found := not_found - (OLD.outcome IS NOT DISTINCT FROM 'not_found')::int;
        failed := failed - COALESCE(OLD.outcome IN ('error', 'unknown', 'rate_limited'), false)::int;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        not_found := not_found + (NEW.outcome IS NOT DISTINCT FROM 'not_found')::int;
        failed := failed + COALESCE(NEW.outcome IN ('error', 'unknown', 'rate_limited'), false)::int;
    END IF;
    IF not_found <> 0 OR failed <> 0 THEN
        UPDATE records SET not_found_attempts = not_found_attempts + not_found,
            failed_attempts = failed_attempts + failed
        WHERE id = COALESCE(NEW.record_id, OLD.record_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER attempts_counted AFTER INSERT OR DELETE OR UPDATE OF outcome ON connector_history
FOR EACH ROW EXECUTE FUNCTION count_record_attempts();

-- The filters' records in order, each only the records that match (the
-- records with failed attempts are those the errors filter looks at).
CREATE INDEX records_unreviewed ON records(record_set_id, position) WHERE new_items > 0;
CREATE INDEX records_nothing_found ON records(record_set_id, position)
    WHERE items_count = 0 AND not_found_attempts > 0;
CREATE INDEX records_failed ON records(record_set_id, position) WHERE failed_attempts > 0;
CREATE INDEX records_by_last_found ON records(record_set_id, last_found_at)
    WHERE last_found_at IS NOT NULL;
