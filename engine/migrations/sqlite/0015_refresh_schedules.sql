-- Scheduled refresh: a record set's pack re-fired over the records whose
-- last fire of it is older than `every_hours`, within UTC hours
-- [window_start, window_end) (equal: any hour), as jobs triggered by
-- `scheduled-refresh`. Every process looks for due schedules; the one
-- that moves `next_run_at` on from the value it read runs it.
CREATE TABLE refresh_schedules (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    record_set_id  BIGINT NOT NULL REFERENCES record_sets(id) ON DELETE CASCADE,
    pack_id        TEXT   NOT NULL,
    every_hours    BIGINT NOT NULL,
    window_start   BIGINT NOT NULL,
    window_end     BIGINT NOT NULL,
    created_by     TEXT   NOT NULL,
    created_at     BIGINT NOT NULL,
    next_run_at    BIGINT NOT NULL,
    last_run_at    BIGINT,
    last_job_id    BIGINT,
    UNIQUE (record_set_id, pack_id)
);
CREATE INDEX refresh_schedules_due ON refresh_schedules(next_run_at);

-- What started a job: a person's fan-out, or a schedule.
ALTER TABLE jobs ADD COLUMN triggered_by TEXT;

-- When each person last looked at a record set: items found since their
-- previous visit are marked new for them (a visit lasts while they come
-- back within 30 minutes).
CREATE TABLE set_visits (
    user_id        BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    record_set_id  BIGINT NOT NULL REFERENCES record_sets(id) ON DELETE CASCADE,
    seen_at        BIGINT NOT NULL,
    -- The end of the visit before this one; NULL on the first.
    since          BIGINT,
    PRIMARY KEY (user_id, record_set_id)
);
