-- What the records view filters by, kept on each record as its items and
-- attempts change (by triggers, so every writer keeps them): a filter then
-- reads an index of the records that match, not every record's items and
-- history.
ALTER TABLE records ADD COLUMN items_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN new_items BIGINT NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN not_found_attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN failed_attempts BIGINT NOT NULL DEFAULT 0;
-- When its newest item was first seen (items are never deleted but with
-- their record).
ALTER TABLE records ADD COLUMN last_found_at BIGINT;

UPDATE records SET
    items_count = (SELECT COUNT(*) FROM items i WHERE i.record_id = records.id),
    new_items = (SELECT COUNT(*) FROM items i WHERE i.record_id = records.id AND i.state = 'new'),
    not_found_attempts = (SELECT COUNT(*) FROM connector_history h
                          WHERE h.record_id = records.id AND h.outcome = 'not_found'),
    failed_attempts = (SELECT COUNT(*) FROM connector_history h WHERE h.record_id = records.id
                       AND h.outcome IN ('error', 'unknown', 'rate_limited')),
    last_found_at = (SELECT MAX(i.first_seen_at) FROM items i WHERE i.record_id = records.id);

CREATE TRIGGER items_counted_in AFTER INSERT ON items BEGIN
    UPDATE records SET items_count = items_count + 1, new_items = new_items + (NEW.state = 'new'),
        last_found_at = MAX(COALESCE(last_found_at, NEW.first_seen_at), NEW.first_seen_at)
    WHERE id = NEW.record_id;
END;

CREATE TRIGGER items_counted_out AFTER DELETE ON items BEGIN
    UPDATE records SET items_count = items_count - 1, new_items = new_items - (OLD.state = 'new')
    WHERE id = OLD.record_id;
END;

CREATE TRIGGER items_state_counted AFTER UPDATE OF state ON items
WHEN (OLD.state = 'new') <> (NEW.state = 'new') BEGIN
    UPDATE records SET new_items = new_items + (NEW.state = 'new') - (OLD.state = 'new')
    WHERE id = NEW.record_id;
END;

CREATE TRIGGER not_found_counted_in AFTER INSERT ON connector_history
WHEN NEW.outcome = 'not_found' BEGIN
    UPDATE records SET not_found_attempts = not_found_attempts + 1 WHERE id = NEW.record_id;
END;

CREATE TRIGGER not_found_counted AFTER UPDATE OF outcome ON connector_history
WHEN (OLD.outcome IS 'not_found') <> (NEW.outcome IS 'not_found') BEGIN
    UPDATE records SET not_found_attempts = not_found_attempts
        + (NEW.outcome IS 'not_found') - (OLD.outcome IS 'not_found')
    WHERE id = NEW.record_id;
END;

CREATE TRIGGER not_found_counted_out AFTER DELETE ON connector_history
WHEN OLD.outcome = 'not_found' BEGIN
    UPDATE records SET not_found_attempts = not_found_attempts - 1 WHERE id = OLD.record_id;
END;

CREATE TRIGGER failed_counted_in AFTER INSERT ON connector_history
WHEN NEW.outcome IN ('error', 'unknown', 'rate_limited') BEGIN
    UPDATE records SET failed_attempts = failed_attempts + 1 WHERE id = NEW.record_id;
END;

CREATE TRIGGER failed_counted AFTER UPDATE OF outcome ON connector_history
WHEN (COALESCE(OLD.outcome IN ('error', 'unknown', 'rate_limited'), 0))
  <> (COALESCE(NEW.outcome IN ('error', 'unknown', 'rate_limited'), 0)) BEGIN
    UPDATE records SET failed_attempts = failed_attempts
        + COALESCE(NEW.outcome IN ('error', 'unknown', 'rate_limited'), 0)
        - COALESCE(OLD.outcome IN ('error', 'unknown', 'rate_limited'), 0)
    WHERE id = NEW.record_id;
END;

CREATE TRIGGER failed_counted_out AFTER DELETE ON connector_history
WHEN OLD.outcome IN ('error', 'unknown', 'rate_limited') BEGIN
    UPDATE records SET failed_attempts = failed_attempts - 1 WHERE id = OLD.record_id;
END;

-- The filters' records in order, each only the records that match (the
-- records with failed attempts are those the errors filter looks at).
CREATE INDEX records_unreviewed ON records(record_set_id, position) WHERE new_items > 0;
CREATE INDEX records_nothing_found ON records(record_set_id, position)
    WHERE items_count = 0 AND not_found_attempts > 0;
CREATE INDEX records_failed ON records(record_set_id, position) WHERE failed_attempts > 0;
CREATE INDEX records_by_last_found ON records(record_set_id, last_found_at)
    WHERE last_found_at IS NOT NULL;
