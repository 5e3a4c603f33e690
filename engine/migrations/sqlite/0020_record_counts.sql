-- How many records a set holds, kept as its records are written (in the
-- same transaction as each batch; records are never added or removed
-- otherwise). Reading a set's size no longer counts its records: on
-- PostgreSQL the planner cannot see which set a correlated count is for,
-- estimated the average set of a database holding a few huge imports and
-- scanned the whole table (500 ms for a 3,000-record set's click).
ALTER TABLE record_sets ADD COLUMN record_count BIGINT NOT NULL DEFAULT 0;
UPDATE record_sets SET record_count = (SELECT COUNT(*) FROM records r WHERE r.record_set_id = record_sets.id);
