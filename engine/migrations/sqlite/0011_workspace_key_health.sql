-- A rate limit, a suspension or a refusal met with a workspace's own key is
-- that workspace's alone: it is kept beside the workspace's own switches.
-- `kind` is the status the workspace sees (NULL for rows from before: a
-- switch, shown as disabled) and `until` when a rate limit or suspension
-- lifts by itself (Unix ms; NULL: until someone switches it back on).
ALTER TABLE workspace_connectors ADD COLUMN kind TEXT;
ALTER TABLE workspace_connectors ADD COLUMN until BIGINT;
