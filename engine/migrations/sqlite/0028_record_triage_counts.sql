-- What the records view filters by, kept on each record as its items and
-- attempts change (by triggers, so every writer keeps them): a filter then
-- reads an index of the records that match, not every record's items and
-- history.
ALTER TABLE records ADD COLUMN items_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN new_items BIGINT NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN not_found_attempts BIGINT NOT NULL DEFAULT 0;

UPDATE records SET
    items_count = (SELECT COUNT(*) FROM items i WHERE i.record_id = records.id),
    new_items = (SELECT COUNT(*) FROM items i WHERE i.record_id = records.id AND i.state = 'new'),
    not_found_attempts = (SELECT COUNT(*) FROM connector_history h
                          WHERE h.record_id = records.id AND h.outcome = 'not_found');

CREATE TRIGGER items_counted_in AFTER INSERT ON items BEGIN
    UPDATE records SET items_count = items_count + 1, new_items = new_items + (NEW.state = 'new')
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

-- The filters' records in order, each only the records that match.
CREATE INDEX records_unreviewed ON records(record_set_id, position) WHERE new_items > 0;
CREATE INDEX records_nothing_found ON records(record_set_id, position)
    WHERE items_count = 0 AND not_found_attempts > 0;
