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
FROM connector_history h JOIN records r ON r.id = h.record_id
ON CONFLICT (record_id, intent) DO NOTHING;

UPDATE chip_facts f SET in_flight = c.in_flight, failed = c.failed
FROM (SELECT record_id, intent, COUNT(*) FILTER (WHERE outcome IS NULL) AS in_flight,
             COUNT(*) FILTER (WHERE outcome IN ('error', 'unknown', 'rate_limited')) AS failed
      FROM connector_history GROUP BY record_id, intent) c
WHERE c.record_id = f.record_id AND c.intent = f.intent;

UPDATE chip_facts f SET last_outcome = l.outcome, retry_until = l.retry_after
FROM (SELECT DISTINCT ON (record_id, intent) record_id, intent, outcome, retry_after
      FROM connector_history WHERE outcome <> 'cancelled'
      ORDER BY record_id, intent, fired_at DESC, id DESC) l
WHERE l.record_id = f.record_id AND l.intent = f.intent;

CREATE INDEX chip_facts_by_set ON chip_facts(record_set_id, intent, state);
-- The records whose attempts for an intent failed and found nothing (the
-- records view's errors filter).
CREATE INDEX chip_facts_failing ON chip_facts(record_set_id, record_id)
    WHERE failed > 0 AND items = 0;
-- The rate-limited chips, by when their wait ends (one that has ended is idle).
CREATE INDEX chip_facts_waiting ON chip_facts(record_set_id, intent, retry_until)
    WHERE state = 'rate_limited';

CREATE FUNCTION keep_chip_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chip_facts (record_id, intent, record_set_id, items)
        SELECT NEW.record_id, NEW.intent, r.record_set_id, 1 FROM records r WHERE r.id = NEW.record_id
        ON CONFLICT (record_id, intent) DO UPDATE SET items = chip_facts.items + 1;
    ELSE
        UPDATE chip_facts SET items = items - 1
        WHERE record_id = OLD.record_id AND intent = OLD.intent;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER chip_items AFTER INSERT OR DELETE ON items
FOR EACH ROW EXECUTE FUNCTION keep_chip_items();

-- An attempt's start, end or removal: its chip's attempts are read again
-- (a range of history_by_record). The chip's row is taken first, in a
-- statement of its own: an attempt of the same chip ending in another
-- transaction has then committed, and the next statement's reading sees it.
CREATE FUNCTION keep_chip_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    chip_record BIGINT;
    chip_intent TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        chip_record := OLD.record_id;
        chip_intent := OLD.intent;
        PERFORM 1 FROM chip_facts
        WHERE record_id = chip_record AND intent = chip_intent FOR UPDATE;
    ELSE
        chip_record := NEW.record_id;
        chip_intent := NEW.intent;
        INSERT INTO chip_facts (record_id, intent, record_set_id)
        SELECT chip_record, chip_intent, r.record_set_id FROM records r WHERE r.id = chip_record
        ON CONFLICT (record_id, intent) DO UPDATE SET in_flight = chip_facts.in_flight;
    END IF;
    UPDATE chip_facts SET
        in_flight = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = chip_record AND h.intent = chip_intent
                     AND h.outcome IS NULL),
        failed = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = chip_record AND h.intent = chip_intent
                     AND h.outcome IN ('error', 'unknown', 'rate_limited')),
        (last_outcome, retry_until) = (SELECT h.outcome, h.retry_after FROM connector_history h
                     WHERE h.record_id = chip_record AND h.intent = chip_intent
                     AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1)
    WHERE record_id = chip_record AND intent = chip_intent;
    RETURN NULL;
END $$;

CREATE TRIGGER chip_attempts AFTER INSERT OR DELETE OR UPDATE OF outcome, retry_after, fired_at
ON connector_history FOR EACH ROW EXECUTE FUNCTION keep_chip_attempts();
