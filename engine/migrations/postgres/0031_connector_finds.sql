-- What each connector found in each record, kept as items are sighted and
-- triaged (by triggers, so every writer keeps them): a set's facets add
-- up per connector the items it found, those nobody triaged and the
-- records where it found exactly one untriaged item from an index,
-- instead of every item and sighting of the set. Items are never deleted
-- but with their record.
CREATE TABLE connector_finds (
    record_id      BIGINT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    connector_id   TEXT   NOT NULL,
    -- The record's set (records never move between sets).
    record_set_id  BIGINT NOT NULL,
    -- The record's distinct items the connector found, and of those the
    -- ones nobody triaged.
    items          BIGINT NOT NULL DEFAULT 0,
    untriaged      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (record_id, connector_id)
);

INSERT INTO connector_finds (record_id, connector_id, record_set_id, items, untriaged)
SELECT i.record_id, e.connector_id, r.record_set_id, COUNT(DISTINCT i.id),
       COUNT(DISTINCT i.id) FILTER (WHERE i.state = 'new')
FROM item_evidence e JOIN items i ON i.id = e.item_id JOIN records r ON r.id = i.record_id
GROUP BY i.record_id, e.connector_id, r.record_set_id;

CREATE INDEX connector_finds_by_set
    ON connector_finds(record_set_id, connector_id, items, untriaged);

-- A sighting: the record's finds through its connector are counted again.
-- The row is taken first, in a statement of its own: a sighting of the
-- same record and connector in another transaction has then committed,
-- and the next statement's reading sees it.
CREATE FUNCTION keep_connector_finds() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found_in BIGINT;
BEGIN
    SELECT record_id INTO found_in FROM items WHERE id = NEW.item_id;
    INSERT INTO connector_finds (record_id, connector_id, record_set_id)
    SELECT found_in, NEW.connector_id, r.record_set_id FROM records r WHERE r.id = found_in
    ON CONFLICT (record_id, connector_id) DO UPDATE SET items = connector_finds.items;
    UPDATE connector_finds SET (items, untriaged) = (
        SELECT COUNT(DISTINCT i.id), COUNT(DISTINCT i.id) FILTER (WHERE i.state = 'new')
        FROM items i JOIN item_evidence e ON e.item_id = i.id
        WHERE i.record_id = found_in AND e.connector_id = NEW.connector_id)
    WHERE record_id = found_in AND connector_id = NEW.connector_id;
    RETURN NULL;
END $$;

CREATE TRIGGER connector_finds_sighted AFTER INSERT ON item_evidence
FOR EACH ROW EXECUTE FUNCTION keep_connector_finds();

-- A decision: the item's connectors count it untriaged or not (an
-- increment under the row's lock, which any order of writers keeps).
CREATE FUNCTION keep_connector_finds_triaged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.state = 'new') <> (NEW.state = 'new') THEN
        UPDATE connector_finds
        SET untriaged = untriaged + (NEW.state = 'new')::int - (OLD.state = 'new')::int
        WHERE record_id = NEW.record_id
        AND connector_id IN (SELECT connector_id FROM item_evidence WHERE item_id = NEW.id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER connector_finds_triaged AFTER UPDATE OF state ON items
FOR EACH ROW EXECUTE FUNCTION keep_connector_finds_triaged();
