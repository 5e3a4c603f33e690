-- Changed answers are evidence. Each connector's last word on an item (its
-- title and snippet) is kept, so when the same connector later reports the
-- same address with different words the item gains a revision: what it
-- said before, what it says now, from which connector and fire, when. The
-- item shows the newest words and keeps its triage; `last_revision_id`
-- names the revision its card shows. Fires are pruned, revisions are not,
-- so `fire_id` is a plain number.
CREATE TABLE item_sightings (
    item_id       BIGINT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    connector_id  TEXT   NOT NULL,
    title         TEXT   NOT NULL,
    snippet       TEXT   NOT NULL,
    seen_at       BIGINT NOT NULL,
    PRIMARY KEY (item_id, connector_id)
);

CREATE TABLE item_revisions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id         BIGINT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    connector_id    TEXT   NOT NULL,
    fire_id         BIGINT NOT NULL,
    changed_at      BIGINT NOT NULL,
    title_before    TEXT   NOT NULL,
    snippet_before  TEXT   NOT NULL,
    title           TEXT   NOT NULL,
    snippet         TEXT   NOT NULL
);
CREATE INDEX item_revisions_item ON item_revisions (item_id, id);
CREATE INDEX item_revisions_fire ON item_revisions (fire_id, connector_id);

ALTER TABLE items ADD COLUMN last_revision_id BIGINT;
