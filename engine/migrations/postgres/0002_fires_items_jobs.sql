-- One fire: one chip click or one job step for one record and pack. Its
-- attempts (one per connector tried) are rows of connector_history.
CREATE TABLE fires (
    id            BIGSERIAL PRIMARY KEY,
    record_id     BIGINT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    pack_id       TEXT   NOT NULL,
    intent        TEXT   NOT NULL,
    triggered_by  TEXT   NOT NULL,
    actor         TEXT   NOT NULL,
    -- running | done | cancelled
    status        TEXT   NOT NULL,
    job_id        BIGINT,
    started_at    BIGINT NOT NULL,
    finished_at   BIGINT
);
CREATE INDEX fires_by_record ON fires(record_id, pack_id);

-- Every attempt of every connector, forever.
CREATE TABLE connector_history (
    id            BIGSERIAL PRIMARY KEY,
    fire_id       BIGINT NOT NULL REFERENCES fires(id) ON DELETE CASCADE,
    record_id     BIGINT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    pack_id       TEXT   NOT NULL,
    intent        TEXT   NOT NULL,
    connector_id  TEXT   NOT NULL,
    triggered_by  TEXT   NOT NULL,
    actor         TEXT   NOT NULL,
    fired_at      BIGINT NOT NULL,
    finished_at   BIGINT,
    -- found | not_found | error | rate_limited | cancelled; NULL while in flight
    outcome       TEXT,
    result_count  BIGINT,
    error         TEXT,
    retry_after   BIGINT
);
CREATE INDEX history_by_record ON connector_history(record_id, intent, fired_at);
CREATE INDEX history_by_connector ON connector_history(connector_id, fired_at);

-- The curated layer: one row per distinct URL per record and intent.
CREATE TABLE items (
    id             BIGSERIAL PRIMARY KEY,
    record_id      BIGINT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    intent         TEXT   NOT NULL,
    url            TEXT   NOT NULL,
    url_key        TEXT   NOT NULL,
    title          TEXT   NOT NULL,
    snippet        TEXT   NOT NULL,
    raw            TEXT   NOT NULL DEFAULT 'null',
    state          TEXT   NOT NULL DEFAULT 'new',
    version        BIGINT NOT NULL DEFAULT 1,
    triaged_by     TEXT,
    triaged_at     BIGINT,
    first_seen_at  BIGINT NOT NULL,
    UNIQUE (record_id, intent, url_key)
);

-- Every sighting of an item.
CREATE TABLE item_evidence (
    id            BIGSERIAL PRIMARY KEY,
    item_id       BIGINT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    fire_id       BIGINT NOT NULL REFERENCES fires(id) ON DELETE CASCADE,
    connector_id  TEXT   NOT NULL,
    triggered_by  TEXT   NOT NULL,
    found_at      BIGINT NOT NULL,
    UNIQUE (item_id, fire_id, connector_id)
);

-- Every triage verb, so undo knows where to go back to; an undone verb is
-- marked, never deleted.
CREATE TABLE triage_log (
    id          BIGSERIAL PRIMARY KEY,
    item_id     BIGINT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    verb        TEXT   NOT NULL,
    from_state  TEXT   NOT NULL,
    to_state    TEXT   NOT NULL,
    actor       TEXT   NOT NULL,
    at          BIGINT NOT NULL,
    undone_by   TEXT,
    undone_at   BIGINT
);
CREATE INDEX triage_by_item ON triage_log(item_id, id);

-- "Always start with this connector for this record" per pack.
CREATE TABLE record_overrides (
    record_id     BIGINT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    pack_id       TEXT   NOT NULL,
    connector_id  TEXT   NOT NULL,
    set_by        TEXT   NOT NULL,
    set_at        BIGINT NOT NULL,
    PRIMARY KEY (record_id, pack_id)
);

-- Audit trail of connector status changes.
CREATE TABLE connector_status_log (
    id            BIGSERIAL PRIMARY KEY,
    connector_id  TEXT   NOT NULL,
    status        TEXT   NOT NULL,
    reason        TEXT,
    actor         TEXT   NOT NULL,
    at            BIGINT NOT NULL
);
CREATE INDEX status_log_by_connector ON connector_status_log(connector_id, id);

-- Fires per connector per UTC day, for daily caps shared by every process.
CREATE TABLE connector_usage (
    connector_id  TEXT   NOT NULL,
    day           BIGINT NOT NULL,
    fires         BIGINT NOT NULL,
    PRIMARY KEY (connector_id, day)
);

-- Set-wide fan-outs.
CREATE TABLE jobs (
    id             BIGSERIAL PRIMARY KEY,
    record_set_id  BIGINT NOT NULL REFERENCES record_sets(id) ON DELETE CASCADE,
    packs          TEXT   NOT NULL,
    -- running | completed | cancelled
    status         TEXT   NOT NULL,
    total          BIGINT NOT NULL,
    created_by     TEXT   NOT NULL,
    created_at     BIGINT NOT NULL,
    finished_at    BIGINT
);

-- One record x pack of a job. A task is claimed (running) by one worker,
-- then done; a task left running by a dead process is claimed again.
CREATE TABLE job_tasks (
    id          BIGSERIAL PRIMARY KEY,
    job_id      BIGINT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    record_id   BIGINT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    pack_id     TEXT   NOT NULL,
    -- pending | running | done
    status      TEXT   NOT NULL,
    outcome     TEXT,
    fire_id     BIGINT,
    claimed_at  BIGINT
);
CREATE INDEX job_tasks_by_status ON job_tasks(job_id, status, id);
