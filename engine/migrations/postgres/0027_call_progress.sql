-- A call over many subjects (web.scrape's addresses) keeps how many it has
-- finished, so any process reads its progress while it runs; a search
-- call's progress is counted from its attempts and leaves this empty.
ALTER TABLE calls ADD COLUMN done BIGINT;
