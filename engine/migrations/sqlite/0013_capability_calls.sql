-- Capability calls: a query walked through a capability's chain with no
-- record behind it (REST, and the agents' and scripts' doors). A call keeps
-- its results until `keep_until`; its attempts are receipts like every
-- fire's, counted in the connector statistics of its workspace.
CREATE TABLE calls (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    capability    TEXT   NOT NULL,
    query         TEXT   NOT NULL,
    -- Fire exactly this connector.
    connector     TEXT,
    max_results   BIGINT NOT NULL,
    -- The connectors of its chain, for its progress.
    chain_length  BIGINT NOT NULL,
    -- running | completed | cancelled | failed
    status        TEXT   NOT NULL,
    created_by    TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    finished_at   BIGINT,
    -- A call still running past this was lost with its process.
    deadline      BIGINT NOT NULL,
    keep_until    BIGINT NOT NULL,
    -- JSON: the results, once the call has ended.
    results       TEXT,
    error         TEXT
);
CREATE INDEX calls_by_workspace ON calls(workspace_id, created_at);
-- Results past their keeping time are forgotten as calls are made.
CREATE INDEX calls_by_keep_until ON calls(keep_until) WHERE results IS NOT NULL;

CREATE TABLE call_attempts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id       BIGINT NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
    connector_id  TEXT   NOT NULL,
    actor         TEXT   NOT NULL,
    fired_at      BIGINT NOT NULL,
    finished_at   BIGINT,
    outcome       TEXT,
    result_count  BIGINT,
    error         TEXT,
    retry_after   BIGINT
);
CREATE INDEX call_attempts_by_call ON call_attempts(call_id);
CREATE INDEX call_attempts_by_time ON call_attempts(fired_at);
