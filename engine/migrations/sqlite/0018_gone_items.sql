-- A page that went away. When a connector leaves out an item it found
-- before, or returns one marked gone, the engine asks the page itself, at
-- most once an hour per item (`checked_at`): a 404 or 410 marks it gone
-- (`gone_at`, why in `gone_reason`), a page marks it back. Items are never
-- deleted, and their triage stays.
ALTER TABLE items ADD COLUMN gone_at BIGINT;
ALTER TABLE items ADD COLUMN gone_reason TEXT;
ALTER TABLE items ADD COLUMN checked_at BIGINT;
