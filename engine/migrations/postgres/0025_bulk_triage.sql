-- Decisions in bulk: one row per decision on many items of a set (who,
-- what, which selection), and each item's own log row names it, so the
-- batch is undone as one step: each item whose last decision is still the
-- batch's goes back.
CREATE TABLE triage_batches (
    id             BIGSERIAL PRIMARY KEY,
    record_set_id  BIGINT NOT NULL REFERENCES record_sets(id) ON DELETE CASCADE,
    verb           TEXT   NOT NULL,
    -- The selection as JSON (model::BulkSelection).
    selection      TEXT   NOT NULL,
    actor          TEXT   NOT NULL,
    at             BIGINT NOT NULL,
    undone_by      TEXT,
    undone_at      BIGINT
);
ALTER TABLE triage_log ADD COLUMN batch_id BIGINT;
CREATE INDEX triage_by_batch ON triage_log(batch_id) WHERE batch_id IS NOT NULL;
