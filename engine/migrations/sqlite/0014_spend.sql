-- What fires cost. Every attempt of a priced connector says what it was
-- billed, in which unit, and whose key paid (the server's or the
-- workspace's own). Budgets cap what a workspace spends in a UTC month, for
-- one connector or for every connector priced in a unit ('*'); `spend`
-- counts it, taken atomically before each call and given back when the
-- provider does not bill the answer, so several processes share one count.
ALTER TABLE connector_history ADD COLUMN cost_micros BIGINT;
ALTER TABLE connector_history ADD COLUMN cost_unit TEXT;
ALTER TABLE connector_history ADD COLUMN paid_by TEXT;
ALTER TABLE call_attempts ADD COLUMN cost_micros BIGINT;
ALTER TABLE call_attempts ADD COLUMN cost_unit TEXT;
ALTER TABLE call_attempts ADD COLUMN paid_by TEXT;

CREATE TABLE budgets (
    workspace_id          BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- A connector's id, or '*' for every connector priced in `unit`.
    connector_id          TEXT   NOT NULL,
    unit                  TEXT   NOT NULL,
    monthly_limit_micros  BIGINT NOT NULL,
    set_by                TEXT   NOT NULL,
    set_at                BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, connector_id, unit)
);

CREATE TABLE spend (
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- A connector's id, or '*' for every connector priced in `unit`.
    connector_id  TEXT   NOT NULL,
    unit          TEXT   NOT NULL,
    -- The UTC month, YYYY-MM.
    month         TEXT   NOT NULL,
    spent_micros  BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, connector_id, unit, month)
);

-- Every billed attempt of a workspace, as a receipt that outlives what it
-- was for: deleting a record set keeps what its fires cost (the names are
-- copied). The spend page and its CSV read it.
CREATE TABLE charges (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id     BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    at               BIGINT NOT NULL,
    connector_id     TEXT   NOT NULL,
    amount_micros    BIGINT NOT NULL,
    unit             TEXT   NOT NULL,
    -- server | workspace: whose key paid
    paid_by          TEXT   NOT NULL,
    -- The person: who fired, or who started the job.
    person           TEXT   NOT NULL,
    outcome          TEXT   NOT NULL,
    capability       TEXT   NOT NULL,
    -- A record's fire (the set and record as they were named then)...
    record_set_id    BIGINT,
    record_set_name  TEXT,
    record_id        BIGINT,
    record_name      TEXT,
    pack_id          TEXT,
    job_id           BIGINT,
    -- ...or a capability call.
    call_id          BIGINT
);
CREATE INDEX charges_by_workspace ON charges(workspace_id, at);

-- A fan-out may allow each record at most so many fires of paid
-- connectors; `job_record_paid` counts them, taken before each call like a
-- budget and given back when the provider did not bill it.
ALTER TABLE jobs ADD COLUMN paid_per_record BIGINT;
CREATE TABLE job_record_paid (
    job_id     BIGINT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    record_id  BIGINT NOT NULL,
    fires      BIGINT NOT NULL,
    PRIMARY KEY (job_id, record_id)
);
