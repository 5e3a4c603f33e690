-- What each record's chip for an intent stands on, kept as its attempts and
-- items change (by triggers, so every writer keeps them): a set's facets
-- count its chips per state from an index instead of reading every
-- record's history. The state follows engine::packs::chip::chip_state; a
-- record without a row here has never been fired for the intent.
CREATE TABLE chip_facts (
    record_id      BIGINT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    intent         TEXT   NOT NULL,
    -- The record's set (records never move between sets).
    record_set_id  BIGINT NOT NULL,
    items          BIGINT NOT NULL DEFAULT 0,
    in_flight      BIGINT NOT NULL DEFAULT 0,
    -- Attempts that failed: error, unknown or rate-limited.
    failed         BIGINT NOT NULL DEFAULT 0,
    -- The newest finished attempt's that was not cancelled.
    last_outcome   TEXT,
    retry_until    BIGINT,
    state          TEXT GENERATED ALWAYS AS (CASE
        WHEN in_flight > 0 THEN 'firing'
        WHEN items > 0 THEN 'found'
        WHEN last_outcome IN ('error', 'unknown') THEN 'error'
        WHEN last_outcome = 'rate_limited' THEN 'rate_limited'
        WHEN last_outcome IN ('found', 'not_found') THEN 'not_found'
    END) STORED,
    PRIMARY KEY (record_id, intent)
);

INSERT INTO chip_facts (record_id, intent, record_set_id, items)
SELECT i.record_id, i.intent, r.record_set_id, COUNT(*)
FROM items i JOIN records r ON r.id = i.record_id
GROUP BY i.record_id, i.intent, r.record_set_id;

INSERT INTO chip_facts (record_id, intent, record_set_id)
SELECT DISTINCT h.record_id, h.intent, r.record_set_id
FROM connector_history h JOIN records r ON r.id = h.record_id WHERE true
ON CONFLICT (record_id, intent) DO NOTHING;

UPDATE chip_facts SET
    in_flight = (SELECT COUNT(*) FROM connector_history h
                 WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                 AND h.outcome IS NULL),
    failed = (SELECT COUNT(*) FROM connector_history h
                 WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                 AND h.outcome IN ('error', 'unknown', 'rate_limited')),
    (last_outcome, retry_until) = (SELECT h.outcome, h.retry_after FROM connector_history h
                 WHERE h.record_id = chip_facts.record_id AND h.intent = chip_facts.intent
                 AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1);

CREATE INDEX chip_facts_by_set ON chip_facts(record_set_id, intent, state);
-- The records whose attempts for an intent failed and found nothing (the
-- records view's errors filter).
CREATE INDEX chip_facts_failing ON chip_facts(record_set_id, record_id)
    WHERE failed > 0 AND items = 0;
-- The rate-limited chips, by when their wait ends (one that has ended is idle).
CREATE INDEX chip_facts_waiting ON chip_facts(record_set_id, intent, retry_until)
    WHERE state = 'rate_limited';

CREATE TRIGGER chip_items_in AFTER INSERT ON items BEGIN
    INSERT INTO chip_facts (record_id, intent, record_set_id, items)
    SELECT NEW.record_id, NEW.intent, r.record_set_id, 1 FROM records r WHERE r.id = NEW.record_id
    ON CONFLICT (record_id, intent) DO UPDATE SET items = items + 1;
END;

CREATE TRIGGER chip_items_out AFTER DELETE ON items BEGIN
    UPDATE chip_facts SET items = items - 1
    WHERE record_id = OLD.record_id AND intent = OLD.intent;
END;

-- An attempt's start, end or removal: its chip's attempts are read again
-- (a range of history_by_record).
CREATE TRIGGER chip_attempts_in AFTER INSERT ON connector_history BEGIN
    INSERT INTO chip_facts (record_id, intent, record_set_id)
    SELECT NEW.record_id, NEW.intent, r.record_set_id FROM records r WHERE r.id = NEW.record_id
    ON CONFLICT (record_id, intent) DO NOTHING;
    UPDATE chip_facts SET
        in_flight = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = NEW.record_id AND h.intent = NEW.intent
                     AND h.outcome IS NULL),
        failed = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = NEW.record_id AND h.intent = NEW.intent
                     AND h.outcome IN ('error', 'unknown', 'rate_limited')),
        (last_outcome, retry_until) = (SELECT h.outcome, h.retry_after FROM connector_history h
                     WHERE h.record_id = NEW.record_id AND h.intent = NEW.intent
                     AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1)
    WHERE record_id = NEW.record_id AND intent = NEW.intent;
END;

CREATE TRIGGER chip_attempts_changed AFTER UPDATE OF outcome, retry_after, fired_at ON connector_history BEGIN
    UPDATE chip_facts SET
        in_flight = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = NEW.record_id AND h.intent = NEW.intent
                     AND h.outcome IS NULL),
        failed = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = NEW.record_id AND h.intent = NEW.intent
                     AND h.outcome IN ('error', 'unknown', 'rate_limited')),
        (last_outcome, retry_until) = (SELECT h.outcome, h.retry_after FROM connector_history h
                     WHERE h.record_id = NEW.record_id AND h.intent = NEW.intent
                     AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1)
    WHERE record_id = NEW.record_id AND intent = NEW.intent;
END;

CREATE TRIGGER chip_attempts_out AFTER DELETE ON connector_history BEGIN
    UPDATE chip_facts SET
        in_flight = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = OLD.record_id AND h.intent = OLD.intent
                     AND h.outcome IS NULL),
        failed = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = OLD.record_id AND h.intent = OLD.intent
                     AND h.outcome IN ('error', 'unknown', 'rate_limited')),
        (last_outcome, retry_until) = (SELECT h.outcome, h.retry_after FROM connector_history h
                     WHERE h.record_id = OLD.record_id AND h.intent = OLD.intent
                     AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1)
    WHERE record_id = OLD.record_id AND intent = OLD.intent;
END;
