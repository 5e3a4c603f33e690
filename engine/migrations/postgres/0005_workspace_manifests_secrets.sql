-- Manifest connectors an admin saved in the browser or through the API: one
-- row per connector, owned by one workspace. Connector ids are one namespace
-- with the built-ins and the drop folder, so the id is the key.
CREATE TABLE workspace_manifests (
    connector_id  TEXT   PRIMARY KEY,
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    format        TEXT   NOT NULL,
    text          TEXT   NOT NULL,
    updated_by    TEXT   NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX workspace_manifests_by_workspace ON workspace_manifests (workspace_id);

-- A workspace's secrets (API keys its connectors read), sealed with
-- AES-256-GCM under the key in SWITCHYARD_SECRETS_KEY: base64 of the nonce
-- followed by the ciphertext. Values are never read back out to anyone.
CREATE TABLE workspace_secrets (
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name          TEXT   NOT NULL,
    sealed        TEXT   NOT NULL,
    set_by        TEXT   NOT NULL,
    set_at        BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, name)
);
