//! Proves that what the database keeps by triggers (each record's counts,
//! each chip's facts, each connector's finds) equals a count from scratch
//! of the attempts, items and sightings behind it, after every kind of
//! write, in any order, on every back-end.

use std::collections::BTreeMap;

use model::TriageVerb;
use sqlx::any::AnyRow;
use sqlx::Row;

use super::batch::{Arg, Batch};
use super::{testing, Store, TriageError};

/// A small deterministic generator (splitmix64): the same writes every run.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        usize::try_from(z % n as u64).unwrap_or(0)
    }

    fn pick<T: Copy>(&mut self, of: &[T]) -> T {
        of[self.below(of.len())]
    }
}

const INTENTS: [&str; 2] = ["search.web", "social.facebook"];
const CONNECTORS: [&str; 2] = ["alpha", "beta"];
const OUTCOMES: [&str; 6] = [
    "found",
    "not_found",
    "error",
    "unknown",
    "rate_limited",
    "cancelled",
];
const VERBS: [TriageVerb; 4] = [
    TriageVerb::AcceptCanonical,
    TriageVerb::AcceptContext,
    TriageVerb::Discard,
    TriageVerb::Undo,
];

async fn ids(store: &Store, sql: &str) -> Vec<i64> {
    sqlx::query_scalar(sql)
        .fetch_all(store.pool())
        .await
        .expect(sql)
}

async fn rows(store: &Store, sql: &str) -> Vec<AnyRow> {
    sqlx::query(sql).fetch_all(store.pool()).await.expect(sql)
}

/// Runs one statement in a transaction of its own (not tried again: two
/// writers of one record's numbers wait for each other in one order, so
/// PostgreSQL never has to end one of them).
async fn exec(store: &Store, sql: &str, args: Vec<Arg>) {
    let mut batch = Batch::default();
    batch.push(sql, args);
    batch.run(store).await.expect(sql);
}

/// What the database holds now, to write to.
struct Rows {
    open: Vec<i64>,
    ended: Vec<i64>,
    items: Vec<i64>,
    fires: Vec<i64>,
}

impl Rows {
    async fn read(store: &Store) -> Self {
        Self {
            open: ids(
                store,
                "SELECT id FROM connector_history WHERE outcome IS NULL",
            )
            .await,
            ended: ids(
                store,
                "SELECT id FROM connector_history WHERE outcome IS NOT NULL",
            )
            .await,
            items: ids(store, "SELECT id FROM items").await,
            fires: ids(store, "SELECT id FROM fires").await,
        }
    }
}

/// One write of the kinds the engine makes, and of those it makes rarely
/// (an attempt written already ended, ended again, removed).
async fn write(store: &Store, dice: &mut Dice, records: &[i64], clock: &mut i64) {
    *clock += 1;
    // Attempts in the same millisecond, and ends out of order, happen.
    let at = *clock - i64::try_from(dice.below(3)).unwrap_or(0);
    let rows = Rows::read(store).await;
    match dice.below(13) {
        0 | 1 => {
            let sql = "INSERT INTO fires (record_id, pack_id, intent, triggered_by, actor, \
                       status, started_at) \
                       VALUES ($1, 'p', $2, 'human-refire', 'ana', 'running', $3)";
            let args = vec![
                dice.pick(records).into(),
                dice.pick(&INTENTS).into(),
                at.into(),
            ];
            exec(store, sql, args).await;
        }
        2..=9 => write_attempt(store, dice, &rows, at).await,
        10 | 11 if !rows.fires.is_empty() => {
            let fire = dice.pick(&rows.fires);
            let connector = dice.pick(&CONNECTORS);
            sight(store, dice, fire, connector, at).await;
        }
        _ if !rows.items.is_empty() => {
            let item = dice.pick(&rows.items);
            let verb = dice.pick(&VERBS);
            let version = store.item(item).await.expect("an item").version;
            match store.triage(item, verb, version, "ana").await {
                Ok(_) | Err(TriageError::Conflict { .. } | TriageError::NothingToUndo(_)) => {}
                Err(e) => panic!("a decision: {e}"),
            }
        }
        _ => {}
    }
}

/// An attempt started (in flight, or written already ended), ended,
/// changed after its end, or removed.
async fn write_attempt(store: &Store, dice: &mut Dice, rows: &Rows, at: i64) {
    let connector = dice.pick(&CONNECTORS);
    let outcome = dice.pick(&OUTCOMES);
    let retry = (dice.below(2) == 0).then_some(at + 1_000);
    let attempt = "INSERT INTO connector_history (fire_id, record_id, pack_id, intent, \
                   connector_id, triggered_by, actor, fired_at, outcome, retry_after) \
                   SELECT id, record_id, pack_id, intent, $1, 'human-refire', 'ana', $2, $3, $4 \
                   FROM fires WHERE id = $5";
    match dice.below(8) {
        0 | 1 if !rows.fires.is_empty() => {
            let fire = dice.pick(&rows.fires);
            let args = vec![
                connector.into(),
                at.into(),
                Arg::Text(None),
                retry.into(),
                fire.into(),
            ];
            exec(store, attempt, args).await;
        }
        2 if !rows.fires.is_empty() => {
            let fire = dice.pick(&rows.fires);
            let args = vec![
                connector.into(),
                at.into(),
                outcome.into(),
                retry.into(),
                fire.into(),
            ];
            exec(store, attempt, args).await;
        }
        3..=5 if !rows.open.is_empty() => {
            let sql = "UPDATE connector_history SET outcome = $1, retry_after = $2, \
                       finished_at = $3 WHERE id = $4";
            let open = dice.pick(&rows.open);
            exec(
                store,
                sql,
                vec![outcome.into(), retry.into(), at.into(), open.into()],
            )
            .await;
        }
        6 if !rows.ended.is_empty() => {
            let ended = dice.pick(&rows.ended);
            if dice.below(2) == 0 {
                let sql =
                    "UPDATE connector_history SET outcome = $1, retry_after = $2 WHERE id = $3";
                exec(store, sql, vec![outcome.into(), retry.into(), ended.into()]).await;
            } else {
                let sql = "UPDATE connector_history SET fired_at = fired_at + 5 WHERE id = $1";
                exec(store, sql, vec![ended.into()]).await;
            }
        }
        7 if !rows.open.is_empty() || !rows.ended.is_empty() => {
            let attempts: Vec<i64> = rows.open.iter().chain(&rows.ended).copied().collect();
            let sql = "DELETE FROM connector_history WHERE id = $1";
            exec(store, sql, vec![dice.pick(&attempts).into()]).await;
        }
        _ => {}
    }
}

/// A connector's answer in a fire: one of three addresses, kept as an item
/// of the fire's record and intent (once), with the sighting.
async fn sight(store: &Store, dice: &mut Dice, fire: i64, connector: &str, at: i64) {
    let key = format!("site-{}", dice.below(3));
    sight_key(store, fire, connector, key, at).await;
}

/// The answer of [`sight`] for address `key`.
async fn sight_key(store: &Store, fire: i64, connector: &str, key: String, at: i64) {
    let mut batch = Batch::default();
    batch.push(
        "INSERT INTO items (record_id, intent, url, url_key, title, snippet, first_seen_at) \
         SELECT record_id, intent, $1, $1, 't', 's', $2 FROM fires WHERE id = $3 \
         ON CONFLICT (record_id, intent, url_key) DO NOTHING",
        vec![key.clone().into(), at.into(), fire.into()],
    );
    batch.push(
        "INSERT INTO item_evidence (item_id, fire_id, connector_id, triggered_by, found_at) \
         SELECT i.id, f.id, $1, 'human-refire', $2 FROM fires f \
         JOIN items i ON i.record_id = f.record_id AND i.intent = f.intent AND i.url_key = $3 \
         WHERE f.id = $4 ON CONFLICT (item_id, fire_id, connector_id) DO NOTHING",
        vec![connector.into(), at.into(), key.into(), fire.into()],
    );
    batch.run(store).await.expect("a sighting");
}

type Kept = BTreeMap<String, String>;

/// Each chip's facts as kept, and as counted from scratch.
async fn chips(store: &Store) -> (Kept, Kept) {
    let mut kept = Kept::new();
    for r in rows(
        store,
        "SELECT record_id, intent, items, in_flight, failed, last_outcome, \
                           retry_until, state FROM chip_facts",
    )
    .await
    {
        let key = format!(
            "{} {}",
            r.get::<i64, _>("record_id"),
            r.get::<String, _>("intent")
        );
        let facts = format!(
            "items {} in flight {} failed {} last {:?} until {:?} state {:?}",
            r.get::<i64, _>("items"),
            r.get::<i64, _>("in_flight"),
            r.get::<i64, _>("failed"),
            r.get::<Option<String>, _>("last_outcome"),
            r.get::<Option<i64>, _>("retry_until"),
            r.get::<Option<String>, _>("state"),
        );
        kept.insert(key, facts);
    }
    let mut counted = Kept::new();
    let chips = rows(
        store,
        "SELECT record_id, intent FROM connector_history \
                             UNION SELECT record_id, intent FROM items",
    )
    .await;
    for c in chips {
        let (record, intent) = (c.get::<i64, _>("record_id"), c.get::<String, _>("intent"));
        let n = |sql: &'static str| {
            let intent = intent.clone();
            async move {
                sqlx::query_scalar::<_, i64>(sql)
                    .bind(record)
                    .bind(intent)
                    .fetch_one(store.pool())
                    .await
                    .expect(sql)
            }
        };
        let items = n("SELECT COUNT(*) FROM items WHERE record_id = $1 AND intent = $2").await;
        let in_flight = n(
            "SELECT COUNT(*) FROM connector_history WHERE record_id = $1 \
                           AND intent = $2 AND outcome IS NULL",
        )
        .await;
        let failed = n(
            "SELECT COUNT(*) FROM connector_history WHERE record_id = $1 AND intent = $2 \
                        AND outcome IN ('error', 'unknown', 'rate_limited')",
        )
        .await;
        let last = sqlx::query(
            "SELECT outcome, retry_after FROM connector_history WHERE record_id = $1 \
             AND intent = $2 AND outcome <> 'cancelled' ORDER BY fired_at DESC, id DESC LIMIT 1",
        )
        .bind(record)
        .bind(intent.clone())
        .fetch_optional(store.pool())
        .await
        .expect("the newest ended attempt");
        let (outcome, until) = last.map_or((None, None), |l| {
            (
                Some(l.get::<String, _>("outcome")),
                l.get::<Option<i64>, _>("retry_after"),
            )
        });
        let state = match outcome.as_deref() {
            _ if in_flight > 0 => Some("firing"),
            _ if items > 0 => Some("found"),
            Some("error" | "unknown") => Some("error"),
            Some("rate_limited") => Some("rate_limited"),
            Some("found" | "not_found") => Some("not_found"),
            _ => None,
        };
        counted.insert(
            format!("{record} {intent}"),
            format!(
                "items {items} in flight {in_flight} failed {failed} last {outcome:?} until {until:?} \
                 state {:?}",
                state.map(str::to_owned)
            ),
        );
    }
    (kept, counted)
}

/// Each record's and each connector's counts as kept, and from scratch.
async fn finds(store: &Store) -> (Kept, Kept) {
    let kept_sql = "SELECT 'record ' || id AS k, items_count || ' ' || new_items || ' ' || \
                    not_found_attempts || ' ' || COALESCE(last_found_at, -1) \
                    || ' ' || failing_chips AS v \
                    FROM records \
                    UNION ALL SELECT 'finds ' || record_id || ' ' || connector_id, \
                    items || ' ' || untriaged FROM connector_finds WHERE items > 0";
    let counted_sql = "SELECT 'record ' || r.id AS k, \
        (SELECT COUNT(*) FROM items i WHERE i.record_id = r.id) || ' ' || \
        (SELECT COUNT(*) FROM items i WHERE i.record_id = r.id AND i.state = 'new') || ' ' || \
        (SELECT COUNT(*) FROM connector_history h WHERE h.record_id = r.id AND h.outcome = 'not_found') || ' ' || \
        COALESCE((SELECT MAX(first_seen_at) FROM items i WHERE i.record_id = r.id), -1) || ' ' || \
        (SELECT COUNT(*) FROM chip_facts f WHERE f.record_id = r.id AND f.failed > 0 AND f.items = 0) \
        AS v FROM records r \
        UNION ALL SELECT 'finds ' || i.record_id || ' ' || e.connector_id, \
        COUNT(DISTINCT i.id) || ' ' || COUNT(DISTINCT CASE WHEN i.state = 'new' THEN i.id END) \
        FROM items i JOIN item_evidence e ON e.item_id = i.id GROUP BY i.record_id, e.connector_id";
    let read = |sql| async move {
        rows(store, sql)
            .await
            .iter()
            .map(|r| (r.get::<String, _>("k"), r.get::<String, _>("v")))
            .collect::<Kept>()
    };
    (read(kept_sql).await, read(counted_sql).await)
}

/// Each set's tallies as kept (folded or not), and as added up from what
/// its records keep (which [`chips`] and [`finds`] count from scratch).
async fn tallies(store: &Store) -> (Kept, Kept) {
    let mut kept = Kept::new();
    for set in ids(store, "SELECT id FROM record_sets").await {
        let tallies = store.set_tallies(set).await.expect("tallies");
        for filter in [
            model::RecordFilter::Unreviewed,
            model::RecordFilter::NothingFound,
            model::RecordFilter::Errors,
        ] {
            let n = tallies.records_in(filter).expect("a kept filter");
            kept.insert(format!("{set} {filter:?}"), n.to_string());
        }
        let (open, decided) = tallies.triage_counts();
        kept.insert(format!("{set} triage"), format!("{open} {decided}"));
        for c in tallies.chip_counts() {
            kept.insert(
                format!("{set} chip {} {}", c.intent, c.state),
                c.records.to_string(),
            );
        }
        for f in tallies.connector_facets() {
            kept.insert(
                format!("{set} finds {}", f.connector_id),
                format!("{} {} {}", f.items, f.untriaged, f.single),
            );
        }
    }
    let counted_sql = "SELECT s.id || ' Unreviewed' AS k, \
        (SELECT COUNT(*) FROM records r WHERE r.record_set_id = s.id AND r.new_items > 0) || '' AS v \
        FROM record_sets s \
        UNION ALL SELECT s.id || ' NothingFound', (SELECT COUNT(*) FROM records r \
        WHERE r.record_set_id = s.id AND r.items_count = 0 AND r.not_found_attempts > 0) || '' \
        FROM record_sets s \
        UNION ALL SELECT s.id || ' Errors', (SELECT COUNT(DISTINCT f.record_id) FROM chip_facts f \
        WHERE f.record_set_id = s.id AND f.failed > 0 AND f.items = 0) || '' FROM record_sets s \
        UNION ALL SELECT s.id || ' triage', \
        (SELECT COALESCE(SUM(new_items), 0) FROM records r WHERE r.record_set_id = s.id) || ' ' || \
        (SELECT COALESCE(SUM(items_count - new_items), 0) FROM records r \
        WHERE r.record_set_id = s.id) FROM record_sets s \
        UNION ALL SELECT record_set_id || ' chip ' || intent || ' ' || state, COUNT(*) || '' \
        FROM chip_facts WHERE state IS NOT NULL GROUP BY record_set_id, intent, state \
        UNION ALL SELECT record_set_id || ' finds ' || connector_id, SUM(items) || ' ' || \
        SUM(untriaged) || ' ' || SUM(CASE WHEN items = 1 AND untriaged = 1 THEN 1 ELSE 0 END) \
        FROM connector_finds GROUP BY record_set_id, connector_id HAVING SUM(items) > 0";
    let counted = rows(store, counted_sql)
        .await
        .iter()
        .map(|r| (r.get::<String, _>("k"), r.get::<String, _>("v")))
        .collect();
    (kept, counted)
}

#[tokio::test]
async fn kept_counts_equal_a_count_from_scratch_after_any_writes() {
    for db in testing::all().await {
        let (store, _, records) = testing::store_with_records(&db.url, &["Acme", "Globex"]).await;
        let mut dice = Dice(35);
        let mut clock = 1_000;
        for step in 0..300 {
            write(&store, &mut dice, &records, &mut clock).await;
            let (kept, counted) = chips(&store).await;
            // A chip's row stays when its last attempt is removed: all zero.
            let kept: Kept = kept
                .into_iter()
                .filter(|(k, v)| {
                    counted.contains_key(k)
                        || !v.starts_with("items 0 in flight 0 failed 0 last None")
                })
                .collect();
            assert_eq!(kept, counted, "{}: chips after write {step}", db.kind());
            let (kept, counted) = finds(&store).await;
            assert_eq!(
                kept,
                counted,
                "{}: records and finds after write {step}",
                db.kind()
            );
            if dice.below(5) == 0 {
                store.fold_set_tallies().await.expect("a fold");
            }
            let (kept, counted) = tallies(&store).await;
            assert_eq!(kept, counted, "{}: tallies after write {step}", db.kind());
        }
        // A set deleted takes its tallies along, folded or not.
        let set: i64 = ids(&store, "SELECT MIN(id) FROM record_sets").await[0];
        store.delete_record_set(set).await.expect("the set deleted");
        store.fold_set_tallies().await.expect("a fold");
        let mut left = ids(&store, "SELECT COUNT(*) FROM set_tallies").await;
        if store.backend() == super::Backend::Postgres {
            left.extend(ids(&store, "SELECT COUNT(*) FROM set_tally_changes").await);
        }
        assert!(
            left.iter().all(|n| *n == 0),
            "{}: nothing of a deleted set: {left:?}",
            db.kind()
        );
    }
}

/// Writers at the same time (on PostgreSQL, in transactions that overlap:
/// the same items sighted, decided and the same chips' attempts ended
/// together) keep the same counts, and none waits for another that waits
/// for it (PostgreSQL would end one: "deadlock detected").
#[tokio::test]
async fn kept_counts_hold_with_writers_at_the_same_time() {
    for db in testing::all().await {
        let (store, _, records) = testing::store_with_records(&db.url, &["Acme"]).await;
        let writers = (0..6u64).map(|n| {
            let (store, records) = (store.clone(), records.clone());
            tokio::spawn(async move {
                let mut dice = Dice(n * 1_000 + 7);
                let mut clock = 1_000;
                for _ in 0..60 {
                    write(&store, &mut dice, &records, &mut clock).await;
                }
            })
        });
        for writer in futures::future::join_all(writers).await {
            writer.expect("a writer");
        }
        // An item one connector found, sighted by another in six fires at
        // once: its first sighting through that one counts once.
        for round in 0..10 {
            let key = format!("together-{round}");
            let mut fires = Vec::new();
            for _ in 0..6 {
                let sql = "INSERT INTO fires (record_id, pack_id, intent, triggered_by, actor, \
                           status, started_at) \
                           VALUES ($1, 'p', 'search.web', 'human-refire', 'ana', 'running', 1)";
                exec(&store, sql, vec![records[0].into()]).await;
                fires.push(ids(&store, "SELECT MAX(id) FROM fires").await[0]);
            }
            sight_key(&store, fires[0], "beta", key.clone(), 1).await;
            let start = std::sync::Arc::new(tokio::sync::Barrier::new(fires.len()));
            let sightings = fires.into_iter().map(|fire| {
                let (store, start, key) = (store.clone(), start.clone(), key.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    sight_key(&store, fire, "alpha", key, 1).await;
                })
            });
            for sighting in futures::future::join_all(sightings).await {
                sighting.expect("a sighting");
            }
        }
        let (kept, counted) = chips(&store).await;
        let kept: Kept = kept
            .into_iter()
            .filter(|(k, v)| {
                counted.contains_key(k) || !v.starts_with("items 0 in flight 0 failed 0")
            })
            .collect();
        assert_eq!(kept, counted, "{}: chips", db.kind());
        let (kept, counted) = finds(&store).await;
        assert_eq!(kept, counted, "{}: records and finds", db.kind());
        let (kept, counted) = tallies(&store).await;
        assert_eq!(kept, counted, "{}: tallies", db.kind());
    }
}
