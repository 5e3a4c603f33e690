-- What the records view filters by, kept on each record as its items and
-- attempts change (by triggers, so every writer keeps them): a filter then
-- reads an index of the records that match, not every record's items and
-- history.
ALTER TABLE records
    ADD COLUMN items_count BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN new_items BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN not_found_attempts BIGINT NOT NULL DEFAULT 0;

UPDATE records r SET items_count = c.items, new_items = c.new_items
FROM (SELECT record_id, COUNT(*) AS items, COUNT(*) FILTER (WHERE state = 'new') AS new_items
      FROM items GROUP BY record_id) c
WHERE c.record_id = r.id;

UPDATE records r SET not_found_attempts = c.attempts
FROM (SELECT record_id, COUNT(*) AS attempts FROM connector_history
      WHERE outcome = 'not_found' GROUP BY record_id) c
WHERE c.record_id = r.id;

CREATE FUNCTION count_record_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE records SET items_count = items_count + 1,
            new_items = new_items + (NEW.state = 'new')::int
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

CREATE FUNCTION count_not_found_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was INT := 0;
    is_now INT := 0;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.outcome IS NOT DISTINCT FROM 'not_found' THEN
        was := 1;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.outcome IS NOT DISTINCT FROM 'not_found' THEN
        is_now := 1;
    END IF;
    IF is_now <> was THEN
        UPDATE records SET not_found_attempts = not_found_attempts + is_now - was
        WHERE id = COALESCE(NEW.record_id, OLD.record_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER not_found_counted AFTER INSERT OR DELETE OR UPDATE OF outcome ON connector_history
FOR EACH ROW EXECUTE FUNCTION count_not_found_attempts();

-- The filters' records in order, each only the records that match.
CREATE INDEX records_unreviewed ON records(record_set_id, position) WHERE new_items > 0;
CREATE INDEX records_nothing_found ON records(record_set_id, position)
    WHERE items_count = 0 AND not_found_attempts > 0;
