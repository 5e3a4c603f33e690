-- The chips' and the connector finds' numbers are kept by increments
-- instead of counted again at every attempt and sighting from the record's
-- whole history (a recount grows with the times a record was fired). An
-- attempt that starts, or one in flight that ends, moves the counts by
-- one; the newest finished attempt is kept with its place in the order
-- (fired_at, id) so an attempt ending can tell whether it is newer.
-- Changes that increments cannot follow (a finished attempt changed again,
-- an attempt removed) count the chip again as before. Writers are one at a
-- time on SQLite: no lock is needed between reading and writing a count.
ALTER TABLE chip_facts ADD COLUMN last_fired_at BIGINT;
ALTER TABLE chip_facts ADD COLUMN last_attempt BIGINT;

UPDATE chip_facts SET (last_fired_at, last_attempt) = (
    SELECT h.fired_at, h.id FROM connector_history h
    WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
    AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1);

DROP TRIGGER chip_attempts_in;
DROP TRIGGER chip_attempts_changed;
DROP TRIGGER chip_attempts_out;

CREATE TRIGGER chip_attempts_in AFTER INSERT ON connector_history BEGIN
    INSERT INTO chip_facts (record_id, intent, record_set_id)
    SELECT NEW.record_id, NEW.intent, r.record_set_id FROM records r WHERE r.id = NEW.record_id
    ON CONFLICT (record_id, intent) DO NOTHING;
    UPDATE chip_facts SET in_flight = in_flight + (NEW.outcome IS NULL),
        failed = failed + COALESCE(NEW.outcome IN ('error', 'unknown', 'rate_limited'), 0)
    WHERE record_id = NEW.record_id AND intent = NEW.intent;
    UPDATE chip_facts SET last_outcome = NEW.outcome, retry_until = NEW.retry_after,
        last_fired_at = NEW.fired_at, last_attempt = NEW.id
    WHERE record_id = NEW.record_id AND intent = NEW.intent
    AND NEW.outcome <> 'cancelled'
    AND (last_attempt IS NULL OR (last_fired_at, last_attempt) < (NEW.fired_at, NEW.id));
END;

-- An attempt in flight ends (or its wait changes while in flight).
CREATE TRIGGER chip_attempts_ended AFTER UPDATE OF outcome, retry_after, fired_at ON connector_history
WHEN OLD.outcome IS NULL AND NEW.fired_at = OLD.fired_at
     AND NEW.record_id = OLD.record_id AND NEW.intent = OLD.intent BEGIN
    UPDATE chip_facts SET in_flight = in_flight - (NEW.outcome IS NOT NULL),
        failed = failed + COALESCE(NEW.outcome IN ('error', 'unknown', 'rate_limited'), 0)
    WHERE record_id = NEW.record_id AND intent = NEW.intent;
    UPDATE chip_facts SET last_outcome = NEW.outcome, retry_until = NEW.retry_after,
        last_fired_at = NEW.fired_at, last_attempt = NEW.id
    WHERE record_id = NEW.record_id AND intent = NEW.intent
    AND NEW.outcome <> 'cancelled'
    AND (last_attempt IS NULL OR (last_fired_at, last_attempt) < (NEW.fired_at, NEW.id));
END;

-- Any other change of an attempt: its chip (the one it left and the one it
-- joined) is counted again from its attempts (a range of history_by_record).
CREATE TRIGGER chip_attempts_changed AFTER UPDATE OF outcome, retry_after, fired_at ON connector_history
WHEN NOT (OLD.outcome IS NULL AND NEW.fired_at = OLD.fired_at
          AND NEW.record_id = OLD.record_id AND NEW.intent = OLD.intent) BEGIN
    UPDATE chip_facts SET
        in_flight = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                     AND h.outcome IS NULL),
        failed = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                     AND h.outcome IN ('error', 'unknown', 'rate_limited')),
        (last_outcome, retry_until, last_fired_at, last_attempt) = (
                  SELECT h.outcome, h.retry_after, h.fired_at, h.id FROM connector_history h
                     WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                     AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1)
    WHERE (record_id, intent) IN (VALUES (OLD.record_id, OLD.intent), (NEW.record_id, NEW.intent));
END;

CREATE TRIGGER chip_attempts_out AFTER DELETE ON connector_history BEGIN
    UPDATE chip_facts SET
        in_flight = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                     AND h.outcome IS NULL),
        failed = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                     AND h.outcome IN ('error', 'unknown', 'rate_limited')),
        (last_outcome, retry_until, last_fired_at, last_attempt) = (
                  SELECT h.outcome, h.retry_after, h.fired_at, h.id FROM connector_history h
                     WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                     AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1)
    WHERE record_id = OLD.record_id AND intent = OLD.intent;
END;

-- A connector's first sighting of an item counts it for the record (and as
-- untriaged while it is new); a sighting the connector made before changes
-- nothing.
DROP TRIGGER connector_finds_sighted;

CREATE TRIGGER connector_finds_sighted AFTER INSERT ON item_evidence
WHEN NOT EXISTS (SELECT 1 FROM item_evidence e WHERE e.item_id = NEW.item_id
                 AND e.connector_id = NEW.connector_id AND e.id <> NEW.id) BEGIN
    INSERT INTO connector_finds (record_id, connector_id, record_set_id)
    SELECT i.record_id, NEW.connector_id, r.record_set_id
    FROM items i JOIN records r ON r.id = i.record_id WHERE i.id = NEW.item_id
    ON CONFLICT (record_id, connector_id) DO NOTHING;
    UPDATE connector_finds SET items = items + 1,
        untriaged = untriaged + (SELECT state = 'new' FROM items WHERE id = NEW.item_id)
    WHERE connector_id = NEW.connector_id
    AND record_id = (SELECT record_id FROM items WHERE id = NEW.item_id);
END;
