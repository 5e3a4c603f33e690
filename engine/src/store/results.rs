//! How a fire's results land in the curated layer: one item per address
//! and record and intent, evidence added for every sighting, a revision when
//! a connector's words for a page change, and triage never touched. These
//! are batch steps the fire's ledger commits in one transaction.

use model::{Capability, TriggeredBy};

use super::batch::{Arg, Batch};
use super::items::ITEM_WITH_EVIDENCE;
use crate::connectors::seam::ConnectorResult;
use crate::urlnorm::{parse_web_url, url_key};

/// Longest title and snippet kept from a provider.
const MAX_TITLE: usize = 500;
const MAX_SNIPPET: usize = 2_000;

fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

/// How many distinct items `results` would become: those with an http(s)
/// address, one per address.
pub fn usable_results(results: &[ConnectorResult]) -> usize {
    let mut keys: Vec<String> = results
        .iter()
        .filter_map(|r| parse_web_url(&r.url))
        .map(|u| url_key(&u))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

/// Results one statement writes at most.
const ROWS_PER_STATEMENT: usize = 100;

/// Adds to `batch` what a fire's results write to the curated layer: a URL
/// seen before for this record and intent gains evidence, a new one becomes
/// a new item, and triage state is never touched. Results whose URL is not
/// http(s) are dropped. Returns the url keys of the items, in result order
/// and without duplicates; [`select_items`] reads their ids after the rest.
#[allow(clippy::too_many_arguments)]
pub(super) fn push_results(
    batch: &mut Batch,
    record_id: i64,
    intent: &Capability,
    fire_id: i64,
    connector_id: &str,
    triggered_by: TriggeredBy,
    results: &[ConnectorResult],
    now: i64,
) -> Vec<String> {
    // One row per address, in result order.
    let mut rows: Vec<(String, String, &ConnectorResult)> = Vec::with_capacity(results.len());
    for result in results {
        let Some(url) = parse_web_url(&result.url) else {
            tracing::warn!(connector = %connector_id, "Dropped a result whose URL is not http(s).");
            continue;
        };
        let key = url_key(&url);
        if !rows.iter().any(|(_, k, _)| *k == key) {
            rows.push((url.to_string(), key, result));
        }
    }
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let values = (0..chunk.len())
            .map(|i| {
                let p = 4 + i * 5;
                format!(
                    "($1, $2, ${}, ${}, ${}, ${}, ${}, $3)",
                    p,
                    p + 1,
                    p + 2,
                    p + 3,
                    p + 4
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let mut args: Vec<Arg> = vec![record_id.into(), intent.name().into(), now.into()];
        for (url, key, result) in chunk {
            args.push(url.as_str().into());
            args.push(key.as_str().into());
            args.push(clip(&result.title, MAX_TITLE).into());
            args.push(clip(&result.snippet, MAX_SNIPPET).into());
            args.push(result.raw.to_string().into());
        }
        batch.push(
            format!(
                "INSERT INTO items (record_id, intent, url, url_key, title, snippet, raw, first_seen_at) \
                 VALUES {values} ON CONFLICT (record_id, intent, url_key) DO NOTHING"
            ),
            args,
        );
        // Every address of the chunk, new or known, gains this sighting.
        let mut args: Vec<Arg> = vec![
            fire_id.into(),
            connector_id.into(),
            triggered_by.name().into(),
            now.into(),
            record_id.into(),
            intent.name().into(),
        ];
        args.extend(chunk.iter().map(|(_, key, _)| Arg::from(key.as_str())));
        batch.push(
            format!(
                "INSERT INTO item_evidence (item_id, fire_id, connector_id, triggered_by, found_at) \
                 SELECT id, $1, $2, $3, $4 FROM items WHERE record_id = $5 AND intent = $6 \
                 AND url_key IN ({}) ON CONFLICT (item_id, fire_id, connector_id) DO NOTHING",
                super::placeholders_after(6, chunk.len())
            ),
            args,
        );
    }
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        push_sightings(batch, record_id, intent, fire_id, connector_id, chunk, now);
    }
    // The items whose words this fire changed show the new words and the
    // revision that says what they were (one per item, fire and connector).
    batch.push(
        "UPDATE items SET last_revision_id = rv.id, title = rv.title, snippet = rv.snippet \
         FROM item_revisions rv WHERE rv.item_id = items.id AND rv.fire_id = $1 \
         AND rv.connector_id = $2",
        vec![fire_id.into(), connector_id.into()],
    );
    rows.into_iter().map(|(_, key, _)| key).collect()
}

/// Adds to `batch`, for results of known addresses: a revision for each
/// item whose words this connector reported differently last time, then
/// this connector's words as its last on each item. Words are compared per
/// connector, because two providers describe one page in their own words.
fn push_sightings(
    batch: &mut Batch,
    record_id: i64,
    intent: &Capability,
    fire_id: i64,
    connector_id: &str,
    chunk: &[(String, String, &ConnectorResult)],
    now: i64,
) {
    // Both statements read this fire's words as `v` and bind the same
    // values: $1 connector, $2 fire, $3 now, $4 record, $5 intent, then
    // three per result.
    let values = (0..chunk.len())
        .map(|i| {
            let p = 6 + i * 3;
            format!("(${p}, ${}, ${})", p + 1, p + 2)
        })
        .collect::<Vec<_>>()
        .join(", ");
    let with = format!("WITH v (url_key, title, snippet) AS (VALUES {values}) ");
    let mut args: Vec<Arg> = vec![
        connector_id.into(),
        fire_id.into(),
        now.into(),
        record_id.into(),
        intent.name().into(),
    ];
    for (_, key, result) in chunk {
        args.push(key.as_str().into());
        args.push(clip(&result.title, MAX_TITLE).into());
        args.push(clip(&result.snippet, MAX_SNIPPET).into());
    }
    batch.push(
        format!(
            "{with}INSERT INTO item_revisions (item_id, connector_id, fire_id, changed_at, \
             title_before, snippet_before, title, snippet) \
             SELECT i.id, $1, $2, $3, s.title, s.snippet, v.title, v.snippet FROM v \
             JOIN items i ON i.record_id = $4 AND i.intent = $5 AND i.url_key = v.url_key \
             JOIN item_sightings s ON s.item_id = i.id AND s.connector_id = $1 \
             WHERE s.title <> v.title OR s.snippet <> v.snippet"
        ),
        args.clone(),
    );
    // `WHERE true` settles SQLite's reading of an upsert from a join; the
    // fire ($2) is not this statement's.
    batch.push(
        format!(
            "{with}INSERT INTO item_sightings (item_id, connector_id, title, snippet, seen_at) \
             SELECT i.id, $1, v.title, v.snippet, $3 FROM v \
             JOIN items i ON i.record_id = $4 AND i.intent = $5 AND i.url_key = v.url_key \
             WHERE true ON CONFLICT (item_id, connector_id) DO UPDATE SET \
             title = excluded.title, snippet = excluded.snippet, seen_at = excluded.seen_at"
        ),
        args,
    );
}

/// Adds to `batch` a read of a record's items for an intent with these url
/// keys, with their evidence: rows for [`fold_items`], marked `part = 'item'`.
pub(super) fn select_items(
    batch: &mut Batch,
    record_id: i64,
    intent: &Capability,
    keys: &[String],
) {
    for chunk in keys.chunks(500) {
        let mut args: Vec<Arg> = vec![record_id.into(), intent.name().into()];
        args.extend(chunk.iter().map(|k| Arg::from(k.as_str())));
        batch.push(
            format!(
                "{ITEM_WITH_EVIDENCE} WHERE i.record_id = $1 AND i.intent = $2 AND i.url_key IN ({}) \
                 ORDER BY i.id, e.found_at, e.id",
                super::placeholders_after(2, chunk.len())
            ),
            args,
        );
    }
}
