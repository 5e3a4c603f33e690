-- Receipts: each attempt keeps, as JSON, the version of the connector that
-- answered and the requests it made (method, host, path, parameter names,
-- status, bytes, latency; never a parameter's value). Older attempts have
-- none.
ALTER TABLE connector_history ADD COLUMN receipt TEXT;
ALTER TABLE call_attempts ADD COLUMN receipt TEXT;
