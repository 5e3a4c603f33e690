-- What a whole set adds up to (its facets: records per filter, chips per
-- intent and state, each connector's finds, items triaged or not), kept
-- per set so reading it takes the same time for 100 records as for
-- 100,000. Each change of what a record keeps (migrations 0028, 0029,
-- 0031) moves its set's numbers, by triggers. SQLite has one writer at a
-- time, so the triggers add to the numbers themselves; PostgreSQL's
-- append their changes for a fold instead (see its migration), so that
-- fires of one set never wait for each other on the same rows.
-- Records, chip facts and connector finds are removed only with their
-- set: no trigger follows their removal, and the set's tallies go with it.
--
-- tally: 'items', 'new_items' (sums over the set's records); 'unreviewed',
-- 'nothing_found', 'errors' (records each filter shows); 'chip:<state>'
-- per intent (subject); 'finds', 'untriaged', 'single' per connector
-- (subject; as in Store::connector_facets).
--
-- Without a reference to the set: a set's removal runs its records'
-- triggers after the set's row is gone, and those would then break it.
-- The set's own trigger below, which runs after them, removes its tallies.
CREATE TABLE set_tallies (
    record_set_id  BIGINT NOT NULL,
    tally          TEXT   NOT NULL,
    subject        TEXT   NOT NULL,
    n              BIGINT NOT NULL,
    PRIMARY KEY (record_set_id, tally, subject)
) WITHOUT ROWID;

CREATE TRIGGER set_tallies_out AFTER DELETE ON record_sets BEGIN
    DELETE FROM set_tallies WHERE record_set_id = OLD.id;
END;

-- The records the errors filter shows: those with a chip whose attempts
-- failed and found nothing, kept on the record like its other counts.
ALTER TABLE records ADD COLUMN failing_chips BIGINT NOT NULL DEFAULT 0;
UPDATE records SET failing_chips = (SELECT COUNT(*) FROM chip_facts f
    WHERE f.record_id = records.id AND f.failed > 0 AND f.items = 0);
CREATE INDEX records_failing ON records(record_set_id, position) WHERE failing_chips > 0;
-- What the errors filter read before: nobody reads it now.
DROP INDEX records_failed;
DROP TRIGGER failed_counted_in;
DROP TRIGGER failed_counted;
DROP TRIGGER failed_counted_out;
ALTER TABLE records DROP COLUMN failed_attempts;

INSERT INTO set_tallies (record_set_id, tally, subject, n)
SELECT record_set_id, t, '', n FROM (
    SELECT record_set_id, 'items' AS t, SUM(items_count) AS n FROM records GROUP BY record_set_id
    UNION ALL SELECT record_set_id, 'new_items', SUM(new_items) FROM records GROUP BY record_set_id
    UNION ALL SELECT record_set_id, 'unreviewed', SUM(new_items > 0) FROM records
        GROUP BY record_set_id
    UNION ALL SELECT record_set_id, 'nothing_found',
        SUM(items_count = 0 AND not_found_attempts > 0) FROM records GROUP BY record_set_id
    UNION ALL SELECT record_set_id, 'errors', SUM(failing_chips > 0) FROM records
        GROUP BY record_set_id
) WHERE n <> 0;

INSERT INTO set_tallies (record_set_id, tally, subject, n)
SELECT record_set_id, 'chip:' || state, intent, COUNT(*) FROM chip_facts
WHERE state IS NOT NULL GROUP BY record_set_id, state, intent;

INSERT INTO set_tallies (record_set_id, tally, subject, n)
SELECT record_set_id, t, connector_id, n FROM (
    SELECT record_set_id, connector_id, 'finds' AS t, SUM(items) AS n FROM connector_finds
        GROUP BY record_set_id, connector_id
    UNION ALL SELECT record_set_id, connector_id, 'untriaged', SUM(untriaged) FROM connector_finds
        GROUP BY record_set_id, connector_id
    UNION ALL SELECT record_set_id, connector_id, 'single', SUM(items = 1 AND untriaged = 1)
        FROM connector_finds GROUP BY record_set_id, connector_id
) WHERE n <> 0;

-- A record's counts change: each of the set's numbers it moves, one
-- trigger each, so a change runs only the statements it needs (a
-- statement that moves nothing still costs SQLite its setting up, and a
-- compound of them a table built at every call). Each moves a number in
-- place: measured, a fan-out kept more of its fires a second than with a
-- row appended per change.

CREATE TRIGGER record_tallied_items AFTER UPDATE OF items_count ON records
WHEN NEW.items_count <> OLD.items_count BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'items', '', NEW.items_count - OLD.items_count WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER record_tallied_new_items AFTER UPDATE OF new_items ON records
WHEN NEW.new_items <> OLD.new_items BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'new_items', '', NEW.new_items - OLD.new_items WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER record_tallied_unreviewed AFTER UPDATE OF new_items ON records
WHEN (NEW.new_items > 0) <> (OLD.new_items > 0) BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'unreviewed', '', (NEW.new_items > 0) - (OLD.new_items > 0) WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER record_tallied_nothing_found AFTER UPDATE OF items_count, not_found_attempts ON records
WHEN (NEW.items_count = 0 AND NEW.not_found_attempts > 0)
     <> (OLD.items_count = 0 AND OLD.not_found_attempts > 0) BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'nothing_found', '', (NEW.items_count = 0 AND NEW.not_found_attempts > 0)
        - (OLD.items_count = 0 AND OLD.not_found_attempts > 0) WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER record_tallied_errors AFTER UPDATE OF failing_chips ON records
WHEN (NEW.failing_chips > 0) <> (OLD.failing_chips > 0) BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'errors', '', (NEW.failing_chips > 0) - (OLD.failing_chips > 0) WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;


-- A chip's state: the set's count of chips in the state it left and in
-- the one it took. Whether it fails: its record's failing chips.

CREATE TRIGGER chip_tallied_in AFTER INSERT ON chip_facts
WHEN NEW.state IS NOT NULL BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'chip:' || NEW.state, NEW.intent, 1 WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER chip_tallied_left AFTER UPDATE ON chip_facts
WHEN OLD.state IS NOT NEW.state AND OLD.state IS NOT NULL BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'chip:' || OLD.state, NEW.intent, -1 WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER chip_tallied_took AFTER UPDATE ON chip_facts
WHEN OLD.state IS NOT NEW.state AND NEW.state IS NOT NULL BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'chip:' || NEW.state, NEW.intent, 1 WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;


CREATE TRIGGER chip_failing_in AFTER INSERT ON chip_facts
WHEN NEW.failed > 0 AND NEW.items = 0 BEGIN
    UPDATE records SET failing_chips = failing_chips + 1 WHERE id = NEW.record_id;
END;

CREATE TRIGGER chip_failing AFTER UPDATE OF failed, items ON chip_facts
WHEN (OLD.failed > 0 AND OLD.items = 0) <> (NEW.failed > 0 AND NEW.items = 0) BEGIN
    UPDATE records SET failing_chips = failing_chips
        + (NEW.failed > 0 AND NEW.items = 0) - (OLD.failed > 0 AND OLD.items = 0)
    WHERE id = NEW.record_id;
END;

-- A connector's finds in a record: its numbers for the set (a row starts
-- at zero: the first sighting moves it).

CREATE TRIGGER finds_tallied_items AFTER UPDATE OF items ON connector_finds
WHEN NEW.items <> OLD.items BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'finds', NEW.connector_id, NEW.items - OLD.items WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER finds_tallied_untriaged AFTER UPDATE OF untriaged ON connector_finds
WHEN NEW.untriaged <> OLD.untriaged BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'untriaged', NEW.connector_id, NEW.untriaged - OLD.untriaged WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER finds_tallied_single AFTER UPDATE OF items, untriaged ON connector_finds
WHEN (NEW.items = 1 AND NEW.untriaged = 1) <> (OLD.items = 1 AND OLD.untriaged = 1) BEGIN
    INSERT INTO set_tallies (record_set_id, tally, subject, n)
    SELECT NEW.record_set_id, 'single', NEW.connector_id, (NEW.items = 1 AND NEW.untriaged = 1) - (OLD.items = 1 AND OLD.untriaged = 1) WHERE true
    ON CONFLICT (record_set_id, tally, subject) DO UPDATE SET n = n + excluded.n;
END;
