-- Every record's name by each three letters in a row (FTS5's trigram
-- tokenizer, folding case), kept by triggers: the records view's search
-- reads the names that hold what was searched instead of every name of
-- the set. Records' names never change, but the index would follow.
CREATE VIRTUAL TABLE record_names USING fts5(
    name, content = 'records', content_rowid = 'id', tokenize = 'trigram'
);
INSERT INTO record_names (record_names) VALUES ('rebuild');

CREATE TRIGGER record_names_in AFTER INSERT ON records BEGIN
    INSERT INTO record_names (rowid, name) VALUES (NEW.id, NEW.name);
END;

CREATE TRIGGER record_names_out AFTER DELETE ON records BEGIN
    INSERT INTO record_names (record_names, rowid, name) VALUES ('delete', OLD.id, OLD.name);
END;

CREATE TRIGGER record_names_renamed AFTER UPDATE OF name ON records BEGIN
    INSERT INTO record_names (record_names, rowid, name) VALUES ('delete', OLD.id, OLD.name);
    INSERT INTO record_names (rowid, name) VALUES (NEW.id, NEW.name);
END;
