//! The site crawler in the matrix. It reads a record's own website (the
//! fake, allow-listed as the only site), so what the site answers (a 429,
//! a refusal, a 5xx, no answer) is that record's error (`this query
//! refused`), never the crawler's status, which every workspace shares;
//! and modes about keys, paging and JSON cannot apply to it.

use std::time::Duration;

use engine::connectors::seam::{FireError, Found};
use model::Capability;

use crate::fake::{every, Answer};
use crate::fixtures::{Fixture, PAGE_READ};
use crate::modes::{empty, kind, not_applicable, success, Cell};
use crate::subjects::{fire_with, opts, Limits, Subject};

/// A company's home page: its title, description and where it is on
/// LinkedIn (and an internal link).
const HOME: &str = r#"<!DOCTYPE html><html lang="en"><head><title>Acme Rockets</title>
<meta name="description" content="We build rockets in Lyon."></head>
<body><h1>Acme</h1><a href="/about">About</a>
<a href="https://www.linkedin.com/company/acme">Acme on LinkedIn</a></body></html>"#;

/// The same page linking nowhere social.
const PLAIN: &str = r#"<!DOCTYPE html><html lang="en"><head><title>Acme Rockets</title></head>
<body><h1>Acme</h1><a href="/about">About</a></body></html>"#;

/// The crawler's first fixture: a social intent, the links a page gives.
pub(crate) fn fixture() -> Fixture {
    Fixture {
        intent: "search.social.linkedin",
        query: "",
        branch: None,
        content_type: "text/html; charset=utf-8",
        success: vec![("", HOME)],
        first_url: "https://www.linkedin.com/company/acme",
        empty: vec![("", PLAIN)],
        refused: (403, "<html><body>Forbidden</body></html>"),
        key_in: None,
        asks: None,
        retitle: (
            "<title>Acme Rockets</title>",
            "<title>Acme Rocketry</title>",
        ),
    }
}

/// Its other intents: the page itself is the result.
pub(crate) fn branches() -> Vec<(&'static str, Fixture)> {
    ["crawl.site", "crawl.extract"]
        .into_iter()
        .map(|intent| {
            let page = Fixture {
                intent,
                first_url: PAGE_READ,
                // A page that answers is itself the result.
                empty: Vec::new(),
                ..fixture()
            };
            ("site-crawler", page)
        })
        .collect()
}

/// The site's own refusal or failure, as the crawler must take it.
fn records_own(outcome: &Result<Found, FireError>, what: &str) -> Cell {
    match outcome {
        Err(FireError::Request { .. }) => Ok(format!(
            "{what}: this record's error; the crawler stays available for every other"
        )),
        other => Err(format!("gave {}", kind(other))),
    }
}

/// Runs the site crawler through every mode one call shows.
pub(crate) async fn call_modes(subject: &Subject, fixture: &Fixture) -> Vec<(&'static str, Cell)> {
    let limits = Limits::default();
    let (outcome, seen) = fire_with(subject, fixture, fixture.ok(&fixture.success), limits).await;
    let mut cells = vec![
        ("success", success(fixture, &outcome, &seen)),
        ("empty", empty(subject, fixture).await),
        (
            "next page",
            not_applicable("it reads one page, the record's own"),
        ),
        (
            "partial pages",
            not_applicable("one request per fire, so no later page can be lost"),
        ),
    ];
    let mut limited = Answer::typed(429, "text/html", "<html>Slow down</html>");
    limited.headers.push(("retry-after", "7".into()));
    let (outcome, _) = fire_with(subject, fixture, every(limited.clone()), limits).await;
    cells.push((
        "429, Retry-After in seconds",
        records_own(&outcome, "the site's 429"),
    ));
    let when = std::time::SystemTime::now() + Duration::from_secs(120);
    limited.headers = vec![
        ("content-type", "text/html".into()),
        ("retry-after", httpdate::fmt_http_date(when)),
    ];
    let (outcome, _) = fire_with(subject, fixture, every(limited), limits).await;
    cells.push((
        "429, Retry-After as a date",
        records_own(&outcome, "the site's 429"),
    ));
    let no_key = "no key: a site's 401 or 403 is that record's error (see 5xx)";
    cells.push(("refused key", not_applicable(no_key)));
    cells.push(("expired key", not_applicable(no_key)));
    cells.extend(failures(subject, fixture).await);
    cells
}

/// Each way a site's answer fails, and pages too large.
async fn failures(subject: &Subject, fixture: &Fixture) -> Vec<(&'static str, Cell)> {
    let limits = Limits::default();
    let down = Answer::typed(503, "text/html", "<html>Down for maintenance</html>");
    let (outcome, _) = fire_with(subject, fixture, every(down), limits).await;
    let upstream = records_own(&outcome, "HTTP 503");
    let mut slow = Answer::typed(200, fixture.content_type, HOME);
    slow.delay = Duration::from_secs(3);
    let short = Limits {
        timeout: Some(Duration::from_millis(300)),
        max_body: None,
    };
    let (outcome, _) = fire_with(subject, fixture, every(slow), short).await;
    let timeout = records_own(&outcome, "no answer in time");
    let nowhere = "http://127.0.0.1:9";
    let connector = subject.connector(limits, nowhere);
    let intent: Capability = fixture.intent.parse().unwrap();
    let outcome = connector
        .fire(&intent, &subject.query(fixture, nowhere), &opts())
        .await;
    let unreachable = records_own(&outcome, "no server");
    let json = every(Answer::json(200, r#"{"results": []}"#));
    let (outcome, _) = fire_with(subject, fixture, json, limits).await;
    let not_a_page = records_own(&outcome, "JSON, not a web page");
    // Its head and links come first: a page cut at the cap still has them.
    let long = format!(
        "{}{}</body></html>",
        HOME.trim_end_matches("</body></html>"),
        "x".repeat(3 << 20)
    );
    let long = every(Answer::typed(200, fixture.content_type, &long));
    let (outcome, _) = fire_with(subject, fixture, long, limits).await;
    let oversized = match &outcome {
        Ok(found) if !found.results.is_empty() => {
            Ok("reads the first 2 MB (its head and links) and stops".into())
        }
        other => Err(format!("gave {}", kind(other))),
    };
    vec![
        ("5xx", upstream),
        ("timeout", timeout),
        ("unreachable", unreachable),
        ("malformed JSON", not_a_page),
        (
            "HTML error page",
            not_applicable("it reads HTML: a maintenance page is what the site shows (5xx above)"),
        ),
        ("oversized body", oversized),
    ]
}
