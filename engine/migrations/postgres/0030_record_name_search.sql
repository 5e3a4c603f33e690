-- Every record's name by each three letters in a row (pg_trgm), so that
-- the records view's search (LOWER(name) LIKE '%...%') reads the names
-- that hold what was searched instead of every name of the set. A
-- database where the extension cannot be made (no pg_trgm, or a role
-- without the right) keeps working without the index, and says so.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'record name search without an index: pg_trgm could not be created (%)', SQLERRM;
END $$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX records_name_trigrams ON records USING gin (LOWER(name) gin_trgm_ops);
    END IF;
END $$;
