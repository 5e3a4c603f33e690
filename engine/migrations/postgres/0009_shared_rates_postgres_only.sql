-- A rate hint held by the whole deployment (PostgreSQL only): one row per
-- connector and key owner holds the earliest time (Unix ms, the database's
-- clock) at which the next call may go. A call takes the next slot with one
-- UPDATE (the row lock orders concurrent takers) and waits until it.
CREATE TABLE rate_slots (
    bucket TEXT PRIMARY KEY,
    next_at DOUBLE PRECISION NOT NULL
);
