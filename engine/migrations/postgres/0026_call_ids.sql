-- Calls and fan-outs share one namespace of job ids (GET /api/jobs/{id}
-- reads either): calls are numbered from 2^40 (model::CALL_IDS_FROM), so a
-- call's id never meets a fan-out's. Calls made before keep their ids and
-- are read at /api/calls/{id}.
SELECT setval(
    pg_get_serial_sequence('calls', 'id'),
    GREATEST((SELECT COALESCE(MAX(id), 0) FROM calls), 1099511627775)
);
