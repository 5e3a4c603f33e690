//! How the records view finds a set's records by a part of their name:
//! on SQLite through the trigram index of every record's name (FTS5,
//! migration 0030) when the part has three letters or more and few names
//! hold it; otherwise, and on PostgreSQL (whose trigram index serves the
//! same `LIKE`, migration 0030), by `LIKE` over the set's names.

use super::{Backend, Store, StoreError};

/// The most names of the whole database a search reads through the
/// trigram index. Past it, the set's own names are read instead.
const MOST_MATCHES: i64 = 20_000;

/// Reading a name through the trigram index (its match, its record, its
/// place in the order) costs about as much as testing 13 of the set's
/// names with `LIKE` (SQLite, records_view bench: 10,000 matches through
/// the index took 77 ms, 100,000 names by `LIKE` 59 ms); rounded up, so
/// the index is read only where it clearly wins. It is read only when
/// fewer names than the set's size over this hold the part: a small set
/// is never slowed by the names of a big one, which may be another
/// workspace's.
const MATCH_COST: i64 = 16;

/// A name search, as the records' query reads it.
pub(super) enum NameSearch {
    /// Nothing searched: every name.
    Everything,
    /// A `LIKE` pattern on the lowered name, its wildcards escaped.
    Like(String),
    /// An FTS5 phrase: the names holding these letters in a row.
    Trigrams(String),
}

impl NameSearch {
    /// The condition on the set's records `r` (the set is `$1`) with the
    /// search, whose text is `$2` when [`Self::text`] has one.
    pub(super) fn condition(&self) -> &'static str {
        match self {
            NameSearch::Everything => "r.record_set_id = $1",
            NameSearch::Like(_) => "r.record_set_id = $1 AND LOWER(r.name) LIKE $2 ESCAPE '\\'",
            // `+` keeps SQLite from reading every record of the set to
            // test it against the matches: the matches lead.
            NameSearch::Trigrams(_) => {
                "+r.record_set_id = $1 AND r.id IN \
                 (SELECT rowid FROM record_names WHERE record_names MATCH $2)"
            }
        }
    }

    /// The search's text to bind as `$2`, if it has one.
    pub(super) fn text(&self) -> Option<&str> {
        match self {
            NameSearch::Everything => None,
            NameSearch::Like(text) | NameSearch::Trigrams(text) => Some(text),
        }
    }
}

impl Store {
    /// How to find the names of set `set_id` holding `search` (trimmed;
    /// case does not matter; `%`, `_`, `\` and `"` are letters like any
    /// other).
    pub(super) async fn name_search(
        &self,
        set_id: i64,
        search: &str,
    ) -> Result<NameSearch, StoreError> {
        let search = search.trim();
        if search.is_empty() {
            return Ok(NameSearch::Everything);
        }
        if self.backend() == Backend::Sqlite && search.chars().count() >= 3 {
            let set_size: i64 =
                sqlx::query_scalar("SELECT record_count FROM record_sets WHERE id = $1")
                    .bind(set_id)
                    .fetch_optional(self.pool())
                    .await?
                    .unwrap_or(0);
            let worth_it = (set_size / MATCH_COST).min(MOST_MATCHES);
            let phrase = format!("\"{}\"", search.replace('"', "\"\""));
            let matches: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM (SELECT rowid FROM record_names \
                 WHERE record_names MATCH $1 LIMIT $2)",
            )
            .bind(phrase.as_str())
            .bind(worth_it + 1)
            .fetch_one(self.pool())
            .await?;
            if matches <= worth_it {
                return Ok(NameSearch::Trigrams(phrase));
            }
        }
        let pattern = format!(
            "%{}%",
            search
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        Ok(NameSearch::Like(pattern))
    }
}
