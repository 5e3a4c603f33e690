-- A person's own order of a pack's connectors in one workspace (Settings,
-- `PUT /api/me/packs/{pack}/chain`): it comes before the bundle's and the
-- pack's chain, for that person's fires and chips only. `connectors` is a
-- JSON array of connector ids. Leaving the workspace (or the workspace
-- going) takes it along.
CREATE TABLE personal_chains (
    user_id       BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    pack_id       TEXT   NOT NULL,
    connectors    TEXT   NOT NULL,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (user_id, workspace_id, pack_id)
);
