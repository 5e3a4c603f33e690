-- A person sets their own password through a one-time, expiring link (an
-- invitation, or a reset the operator issued); only the SHA-256 of the
-- link's secret is kept. An account created by an invitation has no usable
-- password until the link is used.
CREATE TABLE password_links (
    token_hash  TEXT   PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    used_at     BIGINT
);
CREATE INDEX password_links_by_user ON password_links(user_id);

-- Whose session it is, so a new password ends a person's other sessions.
ALTER TABLE sessions ADD COLUMN user_id BIGINT;
CREATE INDEX sessions_by_user ON sessions(user_id);
