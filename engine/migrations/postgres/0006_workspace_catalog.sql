-- Packs and bundles a workspace's admins made or changed in the browser: one
-- row per pack or bundle, the whole definition as JSON. A workspace sees the
-- shipped catalogue with its own rows laid over it (same id: its version).
CREATE TABLE workspace_catalog (
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    kind          TEXT   NOT NULL,
    item_id       TEXT   NOT NULL,
    definition    TEXT   NOT NULL,
    updated_by    TEXT   NOT NULL,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, kind, item_id)
);
