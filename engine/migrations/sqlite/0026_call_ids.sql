-- Calls and fan-outs share one namespace of job ids (GET /api/jobs/{id}
-- reads either): calls are numbered from 2^40 (model::CALL_IDS_FROM), so a
-- call's id never meets a fan-out's. Calls made before keep their ids and
-- are read at /api/calls/{id}.
UPDATE sqlite_sequence SET seq = 1099511627775 WHERE name = 'calls' AND seq < 1099511627775;
INSERT INTO sqlite_sequence (name, seq)
SELECT 'calls', 1099511627775
WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'calls');
