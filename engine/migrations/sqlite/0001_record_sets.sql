-- Record sets: imported lists of entities, triaged under one bundle.
CREATE TABLE record_sets (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL,
    bundle_id   TEXT    NOT NULL,
    is_demo     BIGINT  NOT NULL DEFAULT 0,
    created_at  BIGINT  NOT NULL
);

-- One entity of a record set: its name and the other CSV columns as a JSON object.
CREATE TABLE records (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    record_set_id  BIGINT  NOT NULL REFERENCES record_sets(id) ON DELETE CASCADE,
    position       BIGINT  NOT NULL,
    name           TEXT    NOT NULL,
    fields         TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX records_by_set ON records(record_set_id, position);
