-- A record set still being imported: set while its records are written
-- batch by batch (each batch its own short transaction, so one workspace's
-- large import never holds the database's writer from everyone else), and
-- cleared when the last batch is in. Nothing reads or lists a set while it
-- is set; an import that failed or whose process died is deleted.
ALTER TABLE record_sets ADD COLUMN importing_since BIGINT;
