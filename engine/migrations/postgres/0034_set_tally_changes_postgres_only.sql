-- The sets' tallies (migration 0033) on PostgreSQL: each change of what a
-- record keeps is appended to set_tally_changes by triggers; the serving
-- processes fold the changes into set_tallies every second or so
-- (`Store::fold_set_tallies`), and a reader adds the two. Appending never
-- waits for another writer: every fire of a set would otherwise write, and
-- wait for, the same few rows until its transaction ends. (SQLite has one
-- writer at a time: its triggers add to the tallies themselves.) Records,
-- chip facts and connector finds are removed only with their set: no
-- trigger follows their removal.

-- No reference to the set: a change appended while its set is deleted is
-- dropped by the next fold (set ids are never used again).
CREATE TABLE set_tally_changes (
    id             BIGSERIAL PRIMARY KEY,
    record_set_id  BIGINT NOT NULL,
    tally          TEXT   NOT NULL,
    subject        TEXT   NOT NULL,
    delta          BIGINT NOT NULL
);
CREATE INDEX set_tally_changes_by_set ON set_tally_changes(record_set_id);

-- A record's counts change: each of the set's numbers it moves.
CREATE FUNCTION tally_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO set_tally_changes (record_set_id, tally, subject, delta)
    SELECT NEW.record_set_id, c.t, '', c.d FROM (VALUES
        ('items', NEW.items_count - OLD.items_count),
        ('new_items', NEW.new_items - OLD.new_items),
        ('unreviewed', (NEW.new_items > 0)::int - (OLD.new_items > 0)::int),
        ('nothing_found', (NEW.items_count = 0 AND NEW.not_found_attempts > 0)::int
                        - (OLD.items_count = 0 AND OLD.not_found_attempts > 0)::int),
        ('errors', (NEW.failing_chips > 0)::int - (OLD.failing_chips > 0)::int)
    ) AS c(t, d) WHERE c.d <> 0;
    RETURN NULL;
END $$;

CREATE TRIGGER record_tallied AFTER UPDATE OF items_count, new_items, not_found_attempts,
    failing_chips ON records FOR EACH ROW
WHEN (OLD.items_count <> NEW.items_count OR OLD.new_items <> NEW.new_items
      OR OLD.not_found_attempts <> NEW.not_found_attempts
      OR OLD.failing_chips <> NEW.failing_chips)
EXECUTE FUNCTION tally_record();

-- A chip's state: the set's count of chips in the state it left and in
-- the one it took. Whether it fails: its record's failing chips (the
-- record's row is already taken by the writer of its chip, migration 0032).
CREATE FUNCTION tally_chip() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was TEXT;
    failed_before INT := 0;
    failing_now INT := (NEW.failed > 0 AND NEW.items = 0)::int;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        was := OLD.state;
        failed_before := (OLD.failed > 0 AND OLD.items = 0)::int;
    END IF;
    IF was IS DISTINCT FROM NEW.state THEN
        INSERT INTO set_tally_changes (record_set_id, tally, subject, delta)
        SELECT NEW.record_set_id, 'chip:' || c.s, NEW.intent, c.d
        FROM (VALUES (was, -1), (NEW.state, 1)) AS c(s, d) WHERE c.s IS NOT NULL;
    END IF;
    IF failing_now <> failed_before THEN
        UPDATE records SET failing_chips = failing_chips + failing_now - failed_before
        WHERE id = NEW.record_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER chip_tallied_in AFTER INSERT ON chip_facts FOR EACH ROW
WHEN (NEW.state IS NOT NULL OR (NEW.failed > 0 AND NEW.items = 0))
EXECUTE FUNCTION tally_chip();

CREATE TRIGGER chip_tallied AFTER UPDATE ON chip_facts FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM NEW.state
      OR (OLD.failed > 0 AND OLD.items = 0) <> (NEW.failed > 0 AND NEW.items = 0))
EXECUTE FUNCTION tally_chip();

-- A connector's finds in a record: its numbers for the set.
CREATE FUNCTION tally_finds() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    items_before BIGINT := 0;
    untriaged_before BIGINT := 0;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        items_before := OLD.items;
        untriaged_before := OLD.untriaged;
    END IF;
    INSERT INTO set_tally_changes (record_set_id, tally, subject, delta)
    SELECT NEW.record_set_id, c.t, NEW.connector_id, c.d FROM (VALUES
        ('finds', NEW.items - items_before),
        ('untriaged', NEW.untriaged - untriaged_before),
        ('single', (NEW.items = 1 AND NEW.untriaged = 1)::int
                 - (items_before = 1 AND untriaged_before = 1)::int)
    ) AS c(t, d) WHERE c.d <> 0;
    RETURN NULL;
END $$;

CREATE TRIGGER finds_tallied_in AFTER INSERT ON connector_finds FOR EACH ROW
WHEN (NEW.items <> 0 OR NEW.untriaged <> 0)
EXECUTE FUNCTION tally_finds();

CREATE TRIGGER finds_tallied AFTER UPDATE OF items, untriaged ON connector_finds FOR EACH ROW
WHEN (OLD.items <> NEW.items OR OLD.untriaged <> NEW.untriaged)
EXECUTE FUNCTION tally_finds();
