-- The chips' and the connector finds' numbers are kept by increments under
-- their row's lock instead of counted again at every attempt and sighting
-- from the record's whole history (measured on PostgreSQL: the triggers
-- took 0.8 ms of a fire's 1.0 ms of writes, the recounts most of it, and
-- a recount grows with the times a record was fired). An attempt that
-- ends, or starts, moves the counts by one; the newest finished attempt
-- is kept with its place in the order (fired_at, id) so an attempt ending
-- can tell whether it is newer. Changes that increments cannot follow (a
-- finished attempt changed again, an attempt removed) count the chip again
-- as before.
ALTER TABLE chip_facts
    ADD COLUMN last_fired_at BIGINT,
    ADD COLUMN last_attempt  BIGINT;

UPDATE chip_facts f SET last_fired_at = l.fired_at, last_attempt = l.id
FROM (SELECT DISTINCT ON (record_id, intent) record_id, intent, fired_at, id
      FROM connector_history WHERE outcome <> 'cancelled'
      ORDER BY record_id, intent, fired_at DESC, id DESC) l
WHERE l.record_id = f.record_id AND l.intent = f.intent;

-- A chip counted again from its record's attempts (a range of
-- history_by_record). The chip's row is taken first, in a statement of its
-- own: an attempt of the same chip ending in another transaction has then
-- committed, and the next statement's reading sees it.
CREATE FUNCTION recount_chip(chip_record BIGINT, chip_intent TEXT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chip_facts (record_id, intent, record_set_id)
    SELECT chip_record, chip_intent, r.record_set_id FROM records r
    WHERE r.id = chip_record FOR NO KEY UPDATE OF r
    ON CONFLICT (record_id, intent) DO UPDATE SET in_flight = chip_facts.in_flight;
    UPDATE chip_facts SET
        in_flight = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = chip_record AND h.intent = chip_intent
                     AND h.outcome IS NULL),
        failed = (SELECT COUNT(*) FROM connector_history h
                     WHERE h.record_id = chip_record AND h.intent = chip_intent
                     AND h.outcome IN ('error', 'unknown', 'rate_limited')),
        (last_outcome, retry_until, last_fired_at, last_attempt) = (
                  SELECT h.outcome, h.retry_after, h.fired_at, h.id FROM connector_history h
                     WHERE h.record_id = chip_record AND h.intent = chip_intent
                     AND h.outcome <> 'cancelled' ORDER BY h.fired_at DESC, h.id DESC LIMIT 1)
    WHERE record_id = chip_record AND intent = chip_intent;
END $$;

-- An attempt's start, or the end of one in flight: its chip moves by one
-- (in flight, failed) and takes the attempt's outcome when it is the
-- newest that ended, in one statement. Anything else counts the chip again.
CREATE OR REPLACE FUNCTION keep_chip_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    starts INT;
    fails INT;
    ended BOOLEAN;
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM recount_chip(OLD.record_id, OLD.intent);
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND (OLD.outcome IS NOT NULL OR OLD.fired_at <> NEW.fired_at
            OR OLD.record_id <> NEW.record_id OR OLD.intent <> NEW.intent) THEN
        PERFORM recount_chip(NEW.record_id, NEW.intent);
        IF OLD.record_id <> NEW.record_id OR OLD.intent <> NEW.intent THEN
            PERFORM recount_chip(OLD.record_id, OLD.intent);
        END IF;
        RETURN NULL;
    END IF;
    starts := CASE WHEN TG_OP = 'INSERT' THEN (NEW.outcome IS NULL)::int
                   ELSE -(NEW.outcome IS NOT NULL)::int END;
    fails := COALESCE(NEW.outcome IN ('error', 'unknown', 'rate_limited'), false)::int;
    ended := COALESCE(NEW.outcome <> 'cancelled', false);
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chip_facts AS c (record_id, intent, record_set_id, in_flight, failed,
                                     last_outcome, retry_until, last_fired_at, last_attempt)
        SELECT NEW.record_id, NEW.intent, r.record_set_id, starts, fails,
               CASE WHEN ended THEN NEW.outcome END, CASE WHEN ended THEN NEW.retry_after END,
               CASE WHEN ended THEN NEW.fired_at END, CASE WHEN ended THEN NEW.id END
        FROM records r WHERE r.id = NEW.record_id FOR NO KEY UPDATE OF r
        ON CONFLICT (record_id, intent) DO UPDATE SET
            in_flight = c.in_flight + starts,
            failed = c.failed + fails,
            (last_outcome, retry_until, last_fired_at, last_attempt) = (
                SELECT CASE WHEN newer THEN NEW.outcome ELSE c.last_outcome END,
                       CASE WHEN newer THEN NEW.retry_after ELSE c.retry_until END,
                       CASE WHEN newer THEN NEW.fired_at ELSE c.last_fired_at END,
                       CASE WHEN newer THEN NEW.id ELSE c.last_attempt END
                FROM (SELECT ended AND (c.last_attempt IS NULL
                      OR (c.last_fired_at, c.last_attempt) < (NEW.fired_at, NEW.id)) AS newer) n);
    ELSE
        PERFORM 1 FROM records WHERE id = NEW.record_id FOR NO KEY UPDATE;
        UPDATE chip_facts AS c SET
            in_flight = c.in_flight + starts,
            failed = c.failed + fails,
            (last_outcome, retry_until, last_fired_at, last_attempt) = (
                SELECT CASE WHEN newer THEN NEW.outcome ELSE c.last_outcome END,
                       CASE WHEN newer THEN NEW.retry_after ELSE c.retry_until END,
                       CASE WHEN newer THEN NEW.fired_at ELSE c.last_fired_at END,
                       CASE WHEN newer THEN NEW.id ELSE c.last_attempt END
                FROM (SELECT ended AND (c.last_attempt IS NULL
                      OR (c.last_fired_at, c.last_attempt) < (NEW.fired_at, NEW.id)) AS newer) n)
        WHERE c.record_id = NEW.record_id AND c.intent = NEW.intent;
        IF NOT FOUND THEN
            PERFORM recount_chip(NEW.record_id, NEW.intent);
        END IF;
    END IF;
    RETURN NULL;
END $$;

-- A sighting: the connector's first of an item counts it for the record
-- (and as untriaged while it is new). A sighting the connector made before
-- changes nothing. The record's row is taken first (with the record's row
-- for the connector), and only then is the sighting known to be the
-- first, and the item's state read: a sighting made meanwhile in another
-- transaction has then committed, and so has a decision on the item (a
-- decision takes the record's row before the item's, and its trigger, run
-- after, sees this sighting when this one committed first).
CREATE OR REPLACE FUNCTION keep_connector_finds() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found_in BIGINT;
BEGIN
    IF EXISTS (SELECT 1 FROM item_evidence e WHERE e.item_id = NEW.item_id
               AND e.connector_id = NEW.connector_id AND e.id <> NEW.id) THEN
        RETURN NULL;
    END IF;
    SELECT record_id INTO found_in FROM items WHERE id = NEW.item_id;
    INSERT INTO connector_finds (record_id, connector_id, record_set_id)
    SELECT found_in, NEW.connector_id, r.record_set_id FROM records r
    WHERE r.id = found_in FOR NO KEY UPDATE OF r
    ON CONFLICT (record_id, connector_id) DO UPDATE SET items = connector_finds.items;
    IF NOT EXISTS (SELECT 1 FROM item_evidence e WHERE e.item_id = NEW.item_id
                   AND e.connector_id = NEW.connector_id AND e.id <> NEW.id) THEN
        UPDATE connector_finds SET items = items + 1,
            untriaged = untriaged + (SELECT (state = 'new')::int FROM items WHERE id = NEW.item_id)
        WHERE record_id = found_in AND connector_id = NEW.connector_id;
    END IF;
    RETURN NULL;
END $$;

-- Every writer of a record's kept numbers (its counts, its chips' facts,
-- its connectors' finds) takes the record's row first, so transactions
-- that change the same record's numbers wait for each other in one order,
-- never each for the other. Triggers fire in the order of their names and
-- a fire's end is several statements: without the one first lock a fire's
-- new items took their chip and then the record, an attempt's end the
-- record and then the chip, a decision the connector's finds and then the
-- record, and two of them at once could end in "deadlock detected", one
-- lost after a second's wait. (A decision takes the record's row before
-- the item's, in Store::triage_in_batch, for the same reason.)
CREATE OR REPLACE FUNCTION keep_chip_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chip_facts (record_id, intent, record_set_id, items)
        SELECT NEW.record_id, NEW.intent, r.record_set_id, 1 FROM records r
        WHERE r.id = NEW.record_id FOR NO KEY UPDATE OF r
        ON CONFLICT (record_id, intent) DO UPDATE SET items = chip_facts.items + 1;
    ELSE
        PERFORM 1 FROM records WHERE id = OLD.record_id FOR NO KEY UPDATE;
        UPDATE chip_facts SET items = items - 1
        WHERE record_id = OLD.record_id AND intent = OLD.intent;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION keep_connector_finds_triaged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.state = 'new') <> (NEW.state = 'new') THEN
        PERFORM 1 FROM records WHERE id = NEW.record_id FOR NO KEY UPDATE;
        UPDATE connector_finds
        SET untriaged = untriaged + (NEW.state = 'new')::int - (OLD.state = 'new')::int
        WHERE record_id = NEW.record_id
        AND connector_id IN (SELECT connector_id FROM item_evidence WHERE item_id = NEW.id);
    END IF;
    RETURN NULL;
END $$;
