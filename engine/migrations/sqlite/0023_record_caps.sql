-- What one record may cost in a UTC day, per unit (a workspace's setting).
-- A priced call of a record's fire takes its price from the record's count
-- for the day before it goes out, in one statement that refuses past the
-- cap unless the person said "spend more"; the price is given back when
-- the provider does not bill the answer. The count starts from the day's
-- charges when a cap is set during the day, and a record keeps only
-- today's rows.
CREATE TABLE record_caps (
    workspace_id        BIGINT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    unit                TEXT   NOT NULL,
    daily_limit_micros  BIGINT NOT NULL,
    set_by              TEXT   NOT NULL,
    set_at              BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, unit)
);

CREATE TABLE record_day_spend (
    record_id     BIGINT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    unit          TEXT   NOT NULL,
    -- The UTC day's first millisecond.
    day           BIGINT NOT NULL,
    spent_micros  BIGINT NOT NULL,
    PRIMARY KEY (record_id, unit, day)
);
