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
       COUNT(DISTINCT CASE WHEN i.state = 'new' THEN i.id END)
FROM item_evidence e JOIN items i ON i.id = e.item_id JOIN records r ON r.id = i.record_id
GROUP BY i.record_id, e.connector_id, r.record_set_id;

CREATE INDEX connector_finds_by_set
    ON connector_finds(record_set_id, connector_id, items, untriaged);

-- A connector's first sighting of an item: the record's finds through it
-- are counted again (the record's items, and their sightings).
CREATE TRIGGER connector_finds_sighted AFTER INSERT ON item_evidence
WHEN NOT EXISTS (SELECT 1 FROM item_evidence e WHERE e.item_id = NEW.item_id
                 AND e.connector_id = NEW.connector_id AND e.id <> NEW.id) BEGIN
    INSERT INTO connector_finds (record_id, connector_id, record_set_id)
    SELECT i.record_id, NEW.connector_id, r.record_set_id
    FROM items i JOIN records r ON r.id = i.record_id WHERE i.id = NEW.item_id
    ON CONFLICT (record_id, connector_id) DO NOTHING;
    UPDATE connector_finds SET (items, untriaged) = (
        SELECT COUNT(DISTINCT i.id), COUNT(DISTINCT CASE WHEN i.state = 'new' THEN i.id END)
        FROM items i JOIN item_evidence e ON e.item_id = i.id
        WHERE i.record_id = connector_finds.record_id
        AND e.connector_id = connector_finds.connector_id)
    WHERE connector_id = NEW.connector_id
    AND record_id = (SELECT record_id FROM items WHERE id = NEW.item_id);
END;

CREATE TRIGGER connector_finds_triaged AFTER UPDATE OF state ON items
WHEN (OLD.state = 'new') <> (NEW.state = 'new') BEGIN
    UPDATE connector_finds SET untriaged = untriaged + (NEW.state = 'new') - (OLD.state = 'new')
    WHERE record_id = NEW.record_id
    AND connector_id IN (SELECT connector_id FROM item_evidence WHERE item_id = NEW.id);
END;
