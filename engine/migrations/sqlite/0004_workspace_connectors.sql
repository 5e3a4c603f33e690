-- A connector switched off by a workspace's admin is off for that workspace
-- only: one row per workspace and connector while it is off.
CREATE TABLE workspace_connectors (
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    connector_id  TEXT   NOT NULL,
    reason        TEXT   NOT NULL,
    disabled_by   TEXT   NOT NULL,
    disabled_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, connector_id)
);

-- Status changes a workspace made are that workspace's to see; changes of the
-- connector itself (rate limits, refused keys) have none and everyone sees them.
ALTER TABLE connector_status_log ADD COLUMN workspace_id BIGINT REFERENCES workspaces(id) ON DELETE CASCADE;
