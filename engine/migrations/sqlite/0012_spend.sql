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
