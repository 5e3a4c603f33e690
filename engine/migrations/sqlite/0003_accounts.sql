-- Accounts: workspaces (tenants), users, memberships with a role, API tokens,
-- server-side sessions and per-user settings.

CREATE TABLE workspaces (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL UNIQUE,
    created_at  BIGINT  NOT NULL
);

-- Email is stored lower-cased; the password only as an argon2 PHC string.
CREATE TABLE users (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    email          TEXT    NOT NULL UNIQUE,
    password_hash  TEXT    NOT NULL,
    created_at     BIGINT  NOT NULL
);

CREATE TABLE memberships (
    user_id       BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- admin | member
    role          TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (user_id, workspace_id)
);

-- An API token acts as its user in one workspace. Only its SHA-256 is kept.
CREATE TABLE api_tokens (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id       BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    workspace_id  BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    token_hash    TEXT   NOT NULL UNIQUE,
    created_at    BIGINT NOT NULL,
    last_used_at  BIGINT,
    revoked_at    BIGINT
);

-- Browser sessions, keyed by the SHA-256 of the cookie's session id.
CREATE TABLE sessions (
    id_hash     TEXT   PRIMARY KEY,
    data        TEXT   NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions(expires_at);

-- A user's own short label for a pack, shown on that user's palette only.
CREATE TABLE user_pack_labels (
    user_id  BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    pack_id  TEXT   NOT NULL,
    label    TEXT   NOT NULL,
    PRIMARY KEY (user_id, pack_id)
);

-- Every record set belongs to one workspace; everything under it (records,
-- fires, history, items, jobs, overrides) belongs there through it. Sets from
-- before accounts have none until the first workspace adopts them.
ALTER TABLE record_sets ADD COLUMN workspace_id BIGINT REFERENCES workspaces(id) ON DELETE CASCADE;
CREATE INDEX record_sets_by_workspace ON record_sets(workspace_id, created_at);
