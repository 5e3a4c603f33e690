-- Events shared by every process on this database (PostgreSQL only: SQLite
-- is one process and keeps its events in memory). A process writes a batch
-- of events in one statement: it takes a range of ids from `event_counter`
-- (whose row stays locked until the commit, so batches commit in id order)
-- and sends the last id on the `switchyard_events` channel; every process
-- then reads the new rows by id. Old rows are pruned by age and count.
CREATE TABLE event_counter (
    only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    next_id BIGINT NOT NULL
);
INSERT INTO event_counter (next_id) VALUES (1);

CREATE TABLE events (
    id BIGINT PRIMARY KEY,
    record_set_id BIGINT,
    workspace_id BIGINT,
    -- The event's kind and fields, as the JSON `model::EventKind` writes.
    kind TEXT NOT NULL,
    -- Unix ms.
    at BIGINT NOT NULL
);
CREATE INDEX events_by_time ON events(at);

-- Who is viewing which record set, per process: a process renews its rows
-- with its heartbeat, and rows past `until` belong to a process that died.
CREATE TABLE viewers (
    owner TEXT NOT NULL,
    record_set_id BIGINT NOT NULL,
    viewer TEXT NOT NULL,
    streams INTEGER NOT NULL,
    until BIGINT NOT NULL,
    PRIMARY KEY (owner, record_set_id, viewer)
);
CREATE INDEX viewers_by_set ON viewers(record_set_id, until);
