//! The modes of the connector-discipline document that one call to the
//! fake shows: success, empty, paging, rate limits, refused and expired
//! keys, and each way an answer can fail. Each mode's outcome is a cell of
//! `docs/conformance.md`: what happened, or `n/a` and why a mode cannot
//! apply, or why it is not what the document asks.

use std::time::Duration;

use engine::connectors::seam::{FireError, Found};
use model::Capability;

use crate::fake::{every, start_fake, Answer, Seen};
use crate::fixtures::{Fixture, KeyIn};
use crate::subjects::{assert_no_key, fire_with, opts, Limits, Subject, KEY};

/// The modes of the connector-discipline document, in the table's order:
/// every adapter is run through each, and the suite fails when one is
/// missing or fails. The last seven go through an engine.
pub(crate) const MODES: [&str; 21] = [
    "success",
    "empty",
    "next page",
    "partial pages",
    "429, Retry-After in seconds",
    "429, Retry-After as a date",
    "refused key",
    "expired key",
    "5xx",
    "timeout",
    "unreachable",
    "malformed JSON",
    "HTML error page",
    "oversized body",
    "duplicates in one answer",
    "redelivery",
    "changed content",
    "deletion",
    "no answer after sending",
    "a workspace's own key",
    "results stay in their workspace",
];

/// One mode's outcome for one adapter: what happened, in words (`n/a: why`
/// when the mode cannot apply to it), or why it is not what the document
/// asks.
pub(crate) type Cell = Result<String, String>;

/// A mode the adapter cannot meet by its nature, and why: shown as such,
/// never as a pass.
pub(crate) fn not_applicable(why: &str) -> Cell {
    Ok(format!("n/a: {why}"))
}

/// "1 result", "2 results".
pub(crate) fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

pub(crate) fn ensure(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

/// The words of an adapter's error, with its kind.
pub(crate) fn kind(outcome: &Result<Found, FireError>) -> String {
    match outcome {
        Ok(found) => count(found.results.len(), "result"),
        Err(FireError::RateLimited { .. }) => "rate-limited".into(),
        Err(FireError::AuthFailed { .. }) => "auth-failed".into(),
        Err(FireError::Upstream { .. }) => "error (provider)".into(),
        Err(FireError::Timeout { .. }) => "error (timeout)".into(),
        Err(FireError::Malformed { .. }) => "error (unreadable answer)".into(),
        Err(FireError::Request { .. }) => "error (this query refused)".into(),
    }
}

/// Runs one adapter through every mode one call shows (the site crawler
/// through its own: [`crate::site::call_modes`]).
pub(crate) async fn call_modes(subject: &Subject, fixture: &Fixture) -> Vec<(&'static str, Cell)> {
    if let Subject::Site = subject {
        return crate::site::call_modes(subject, fixture).await;
    }
    let limits = Limits::default();
    let (outcome, seen) = fire_with(subject, fixture, fixture.ok(&fixture.success), limits).await;
    assert_no_key(&subject.registration().profile.id, &outcome);
    let mut cells = vec![("success", success(fixture, &outcome, &seen))];
    let success_results = outcome.as_ref().map_or(0, |f| f.results.len());
    cells.push(("empty", empty(subject, fixture).await));
    cells.push((
        "next page",
        next_page(subject, fixture, &seen, success_results),
    ));
    cells.push((
        "partial pages",
        partial_pages(subject, fixture, &seen).await,
    ));
    cells.extend(rate_limits(subject, fixture).await);
    cells.extend(keys(subject, fixture).await);
    cells.extend(failures(subject, fixture).await);
    cells
}

/// Empty: not found is an empty list, not an error.
pub(crate) async fn empty(subject: &Subject, fixture: &Fixture) -> Cell {
    if fixture.empty.is_empty() {
        return not_applicable(NEVER_EMPTY);
    }
    let (outcome, _) = fire_with(
        subject,
        fixture,
        fixture.ok(&fixture.empty),
        Limits::default(),
    )
    .await;
    match &outcome {
        Ok(found) if found.results.is_empty() => Ok("nothing found (not an error)".into()),
        other => Err(format!("gave {}", kind(other))),
    }
}

/// Why a fixture without an empty answer has none.
pub(crate) const NEVER_EMPTY: &str = "every answer names the page read: it is never nothing";

/// Success: results with their fields, the key sent the documented way.
pub(crate) fn success(
    fixture: &Fixture,
    outcome: &Result<Found, FireError>,
    seen: &[Seen],
) -> Cell {
    let results = &outcome.as_ref().map_err(|e| format!("gave {e}"))?.results;
    ensure(!results.is_empty(), || "no results".into())?;
    ensure(fixture.is_first(&results[0].url), || {
        format!("first result {}", results[0].url)
    })?;
    for r in results {
        ensure(!r.title.trim().is_empty(), || {
            "a result without a title".into()
        })?;
        ensure(
            !r.title.contains('<') && !r.snippet.contains("<strong>"),
            || format!("markup in text: {r:?}"),
        )?;
    }
    ensure(
        seen.iter().all(|s| {
            s.headers
                .get("user-agent")
                .is_some_and(|ua| ua.to_str().unwrap_or("").starts_with("Switchyard/"))
        }),
        || "no Switchyard User-Agent".into(),
    )?;
    let key = key_sent(fixture.key_in, seen, KEY)?;
    let branch = match fixture.branch {
        Some(word) => {
            ensure(
                seen.iter()
                    .all(|s| s.uri.contains(word) || s.body.contains(word)),
                || format!("a request without {word}"),
            )?;
            format!("; asks `{word}`")
        }
        None => String::new(),
    };
    Ok(format!(
        "{}, first {}; {key}{branch}",
        count(results.len(), "result"),
        fixture.first_url
    ))
}

/// Whether every request carried `key` where the provider documents it (or,
/// for a keyless provider, no key at all); in words.
pub(crate) fn key_sent(
    key_in: Option<KeyIn>,
    seen: &[Seen],
    key: &str,
) -> Result<&'static str, String> {
    Ok(match key_in {
        Some(KeyIn::Bearer) => {
            ensure(
                seen.iter().all(|s| {
                    s.headers
                        .get("authorization")
                        .is_some_and(|v| v == &format!("Bearer {key}"))
                }),
                || "bearer key".into(),
            )?;
            "key as a bearer token"
        }
        Some(KeyIn::Header(name)) => {
            ensure(
                seen.iter()
                    .all(|s| s.headers.get(name).is_some_and(|v| v == key)),
                || "key header".into(),
            )?;
            "key in a header"
        }
        Some(KeyIn::Query(name)) => {
            ensure(
                seen.iter()
                    .all(|s| s.uri.contains(&format!("{name}={key}"))),
                || "key parameter".into(),
            )?;
            "key as a parameter"
        }
        None => {
            ensure(
                seen.iter()
                    .all(|s| !s.uri.contains(key) && !s.body.contains(key)),
                || "a keyless provider got a key".into(),
            )?;
            "no key"
        }
    })
}

/// Next page: a manifest that pages reads the next page when the first
/// was short; the others ask for the fire's results in one page.
fn next_page(subject: &Subject, fixture: &Fixture, seen: &[Seen], results: usize) -> Cell {
    let pages =
        matches!(subject, Subject::Shipped { manifest, .. } if manifest.contains("[pagination]"));
    if pages {
        let second = fixture.success.get(1).map_or("", |(word, _)| *word);
        return ensure(
            seen.len() == 2 && seen[1].uri.contains(second) && results == 2,
            || format!("{} requests, {results} results", seen.len()),
        )
        .map(|()| {
            format!(
                "reads the next page (`{}`) after a short first: 2 results from 2 requests",
                second.trim_start_matches('&')
            )
        });
    }
    match fixture.asks {
        Some(asks) => ensure(
            seen.iter()
                .any(|s| s.uri.contains(asks) || s.body.contains(asks)),
            || {
                format!(
                    "no request asks {asks}: {:?}",
                    seen.iter().map(|s| &s.uri).collect::<Vec<_>>()
                )
            },
        )
        .map(|()| format!("one page holds the fire's results: asks `{asks}`")),
        None => not_applicable("the provider has no page size; its first page is the answer"),
    }
}

/// Partial pages: a later request failing.
async fn partial_pages(subject: &Subject, fixture: &Fixture, seen: &[Seen]) -> Cell {
    if fixture.success.len() == 1 {
        ensure(seen.len() == 1, || {
            format!("{} requests for one page", seen.len())
        })?;
        return not_applicable("one request per fire, so no later page can be lost");
    }
    let mut answers = fixture.ok(&fixture.success);
    let last = answers.len() - 1;
    answers[last].1 = Answer::json(502, r#"{"error":"bad gateway"}"#);
    let (outcome, _) = fire_with(subject, fixture, answers, Limits::default()).await;
    assert_no_key(&subject.registration().profile.id, &outcome);
    match &outcome {
        Err(FireError::Upstream { .. }) => {
            Ok("its second request failing fails the fire: the first alone names no result".into())
        }
        Ok(found) if found.partial.is_some() => {
            Ok(format!("kept {}, marked partial", found.results.len()))
        }
        other => Err(format!("gave {}", kind(other))),
    }
}

/// 429 with Retry-After in seconds, and as a date.
async fn rate_limits(subject: &Subject, fixture: &Fixture) -> Vec<(&'static str, Cell)> {
    let limits = Limits::default();
    let mut limited = Answer::json(429, r#"{"error":"Too Many Requests"}"#);
    limited.headers.push(("retry-after", "7".into()));
    let (outcome, _) = fire_with(subject, fixture, every(limited), limits).await;
    assert_no_key(&subject.registration().profile.id, &outcome);
    let seconds = match &outcome {
        Err(FireError::RateLimited {
            retry_after: Some(d),
            ..
        }) if *d == Duration::from_secs(7) => Ok("rate-limited for 7 s".into()),
        other => Err(format!("gave {}", kind(other))),
    };
    let mut limited = Answer::json(429, r#"{"error":"Too Many Requests"}"#);
    let when = std::time::SystemTime::now() + Duration::from_secs(120);
    limited
        .headers
        .push(("retry-after", httpdate::fmt_http_date(when)));
    let (outcome, _) = fire_with(subject, fixture, every(limited), limits).await;
    let date = match &outcome {
        Err(FireError::RateLimited {
            retry_after: Some(d),
            ..
        }) if (110..=120).contains(&d.as_secs()) => Ok("rate-limited until that date".into()),
        other => Err(format!("gave {}", kind(other))),
    };
    vec![
        ("429, Retry-After in seconds", seconds),
        ("429, Retry-After as a date", date),
    ]
}

/// The provider's own refusal of a key (a key echoed back is scrubbed),
/// and a key that worked and then is refused.
async fn keys(subject: &Subject, fixture: &Fixture) -> Vec<(&'static str, Cell)> {
    let id = subject.registration().profile.id;
    let limits = Limits::default();
    let (status, body) = fixture.refused;
    let (outcome, _) = fire_with(subject, fixture, every(Answer::json(status, body)), limits).await;
    assert_no_key(&id, &outcome);
    let mut refused = match &outcome {
        Err(FireError::AuthFailed { .. }) => Ok(format!("HTTP {status}: auth-failed")),
        other => Err(format!("HTTP {status} gave {}", kind(other))),
    };
    if fixture.key_in.is_some() {
        let echo = format!(r#"{{"error":"bad key {KEY}"}}"#);
        let (outcome, _) =
            fire_with(subject, fixture, every(Answer::json(401, &echo)), limits).await;
        assert_no_key(&id, &outcome);
        if !matches!(outcome, Err(FireError::AuthFailed { .. })) {
            refused = Err(format!("401 gave {}", kind(&outcome)));
        } else if let Ok(words) = &mut refused {
            words.push_str("; a key echoed back is scrubbed");
        }
    }
    let (base, fake) = start_fake().await;
    *fake.answers.lock().unwrap() = fixture.ok(&fixture.success);
    let connector = subject.connector(limits, &base);
    let intent: Capability = fixture.intent.parse().unwrap();
    let query = subject.query(fixture, &base);
    let first = connector.fire(&intent, &query, &opts()).await;
    *fake.answers.lock().unwrap() = every(Answer::json(401, r#"{"error":"key expired"}"#));
    let then = connector.fire(&intent, &query, &opts()).await;
    assert_no_key(&id, &then);
    let expired = match (&first, &then) {
        (Ok(_), Err(FireError::AuthFailed { .. })) => {
            Ok("answered, then HTTP 401: auth-failed".into())
        }
        _ => Err(format!("gave {} then {}", kind(&first), kind(&then))),
    };
    vec![("refused key", refused), ("expired key", expired)]
}

/// Each way an answer fails: 5xx, no answer in time, no server, malformed
/// JSON, an HTML error page, an oversized body.
async fn failures(subject: &Subject, fixture: &Fixture) -> Vec<(&'static str, Cell)> {
    let limits = Limits::default();
    let gave = |outcome: &Result<Found, FireError>,
                ok: &dyn Fn(&FireError) -> Option<&'static str>| {
        match outcome {
            Err(e) => ok(e)
                .map(str::to_owned)
                .ok_or_else(|| format!("gave {}", kind(outcome))),
            Ok(_) => Err(format!("gave {}", kind(outcome))),
        }
    };
    let bad_gateway = every(Answer::json(502, r#"{"error":"bad gateway"}"#));
    let (outcome, _) = fire_with(subject, fixture, bad_gateway, limits).await;
    let upstream = gave(&outcome, &|e| {
        matches!(e, FireError::Upstream { .. })
            .then_some("HTTP 502: error (provider), retried by the chain")
    });
    let mut slow = Answer::json(200, fixture.success[0].1);
    slow.delay = Duration::from_secs(3);
    let short = Limits {
        timeout: Some(Duration::from_millis(300)),
        max_body: None,
    };
    let (outcome, _) = fire_with(subject, fixture, every(slow), short).await;
    let timeout = gave(&outcome, &|e| {
        matches!(e, FireError::Timeout { .. }).then_some("error (timeout)")
    });
    let nowhere = "http://127.0.0.1:9";
    let connector = subject.connector(limits, nowhere);
    let intent: Capability = fixture.intent.parse().unwrap();
    let outcome = connector
        .fire(&intent, &subject.query(fixture, nowhere), &opts())
        .await;
    assert_no_key(&subject.registration().profile.id, &outcome);
    let unreachable = gave(&outcome, &|e| {
        matches!(e, FireError::Upstream { .. }).then_some("error (provider)")
    });
    let cut = every(Answer::json(200, r#"{"results": [{"url": "#));
    let (outcome, _) = fire_with(subject, fixture, cut, limits).await;
    let malformed = gave(&outcome, &|e| {
        matches!(e, FireError::Malformed { .. }).then_some("error (unreadable answer)")
    });
    let html = Answer {
        status: 200,
        headers: vec![("content-type", "text/html".into())],
        body: "<!DOCTYPE html><html><body>Maintenance</body></html>".into(),
        delay: Duration::ZERO,
    };
    let (outcome, _) = fire_with(subject, fixture, every(html), limits).await;
    let html = gave(&outcome, &|e| {
        e.to_string()
            .contains("HTML")
            .then_some("error: an HTML page, not an answer")
    });
    let big = Answer::json(
        200,
        &format!(r#"{{"pad":"{}"}}"#, "x".repeat(3 * 1024 * 1024)),
    );
    let capped = Limits {
        timeout: None,
        max_body: Some(64 * 1024),
    };
    let (outcome, _) = fire_with(subject, fixture, every(big), capped).await;
    let oversized = gave(&outcome, &|e| {
        matches!(e, FireError::Malformed { reason } if reason.contains("more than"))
            .then_some("error: stops reading past the cap")
    });
    vec![
        ("5xx", upstream),
        ("timeout", timeout),
        ("unreachable", unreachable),
        ("malformed JSON", malformed),
        ("HTML error page", html),
        ("oversized body", oversized),
    ]
}
