-- Connector health held by the database, so every process agrees and it
-- survives a restart: a person's switch, a provider's rate limit or refusal,
-- a suspension after errors (with how many suspensions in a row, for the
-- back-off). One row per connector; the status is `model::ConnectorStatus`
-- as JSON. `needs-env` is derived from each process's environment, never
-- stored. (PostgreSQL's migration of the same name does the same.)
CREATE TABLE connector_health (
    connector_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    suspensions INTEGER NOT NULL,
    changed_at BIGINT NOT NULL
);
