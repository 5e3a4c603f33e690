//! The standing abuse suite over everything that reads untrusted input: the
//! CSV importer, the manifest checker and its templates, JSONPath mapping
//! of providers' answers, and URL identity. Each target runs thousands of
//! generated cases (`make test` prints the counts) and must never panic;
//! every rejection must name its line or field. A failing case is kept (in
//! `engine/proptest-regressions/`, and beside a test file for the suite in
//! `tests/`) and replayed first on every later run.
//! (The coded adapters' answers are fuzzed in `tests/conformance.rs`,
//! through their fake provider.)

use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

#[path = "../tests/common/fuzzing.rs"]
mod fuzzing;
use fuzzing::{fuzz, json};

use crate::connectors::manifest::{map_page, over_node_limit, render, Format, Manifest};
use crate::import::{parse_csv, ImportError, ImportLimits};
use crate::urlnorm::{parse_web_url, url_key};

/// A CSV cell as people and tools write them, and as an attacker would.
fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 .-]{0,12}",
        "\"[^\"]{0,10}\"",
        Just(String::new()),
        "\\PC{0,8}",
        Just("=HYPERLINK(\"http://evil.example\")".to_owned()),
        "[,\"\r\n\t\u{0}\u{7}\u{feff}]{1,4}",
    ]
}

fn column() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("name".to_owned()),
        Just("Name".to_owned()),
        "[a-z_]{1,10}",
        Just(String::new()),
        "\\PC{0,120}",
    ]
}

/// A whole CSV file: a header, rows of cells, either line ending.
fn csv_file() -> impl Strategy<Value = String> {
    (
        vec(column(), 1..8),
        vec(vec(cell(), 0..9), 0..40),
        any::<bool>(),
    )
        .prop_map(|(header, rows, crlf)| {
            let end = if crlf { "\r\n" } else { "\n" };
            let mut text = header.join(",");
            for row in rows {
                text.push_str(end);
                text.push_str(&row.join(","));
            }
            text
        })
}

fn check_import(bytes: &[u8]) -> Result<(), TestCaseError> {
    let breaks = (0..bytes.len())
        .filter(|&i| bytes[i] == b'\n' || (bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n')))
        .count();
    let lines = breaks as u64 + 1;
    match parse_csv(bytes, ImportLimits::default()) {
        Ok(parsed) => {
            for r in &parsed.rejected {
                prop_assert!(r.line >= 2 && r.line <= lines, "line {} of {lines}", r.line);
                prop_assert!(!r.reason.is_empty());
            }
            prop_assert!(parsed.rejected_count >= parsed.rejected.len() as u64);
            prop_assert!(parsed.records.len() as u64 + parsed.rejected_count <= lines);
            for record in &parsed.records {
                prop_assert!(!record.name.is_empty());
                prop_assert!(!record
                    .name
                    .chars()
                    .any(|c| c.is_control() && c != '\n' && c != '\t'));
            }
        }
        Err(ImportError::BadHeader(why)) => prop_assert!(!why.is_empty()),
        Err(e) => prop_assert!(!e.to_string().is_empty()),
    }
    Ok(())
}

#[test]
fn fuzz_csv_import() {
    fuzz(
        "CSV import (bytes)",
        2_000,
        file!(),
        vec(any::<u8>(), 0..2_000),
        |bytes| check_import(&bytes),
    );
    fuzz("CSV import (files)", 3_000, file!(), csv_file(), |text| {
        check_import(text.as_bytes())
    });
}

/// A shipped manifest, to mutate.
const SHIPPED: &str = include_str!("../../connectors/hn-algolia.toml");

/// A shipped manifest with one value replaced by an arbitrary one.
fn mutated_manifest() -> impl Strategy<Value = String> {
    let lines: Vec<&'static str> = SHIPPED.lines().collect();
    let count = lines.len();
    (0..count, "\\PC{0,40}", any::<bool>()).prop_map(move |(at, value, quoted)| {
        let mut out = Vec::with_capacity(count);
        for (i, line) in lines.iter().enumerate() {
            match line.split_once(" = ") {
                Some((key, _)) if i == at => out.push(if quoted {
                    format!("{key} = {}", toml_string(&value))
                } else {
                    format!("{key} = {value}")
                }),
                _ => out.push((*line).to_owned()),
            }
        }
        out.join("\n")
    })
}

/// A TOML basic string holding `s`.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn check_manifest(text: &str, format: Format) -> Result<(), TestCaseError> {
    if let Err(e) = Manifest::parse(text, format) {
        prop_assert!(!e.0.is_empty(), "an error without a problem");
        for p in &e.0 {
            prop_assert!(!p.field.is_empty() && !p.message.is_empty(), "{p:?}");
        }
    }
    Ok(())
}

#[test]
fn fuzz_manifest_checker() {
    assert!(
        Manifest::parse(SHIPPED, Format::Toml).is_ok(),
        "the seed must check"
    );
    fuzz(
        "manifest checker (text)",
        1_000,
        file!(),
        "\\PC{0,300}",
        |text| {
            check_manifest(&text, Format::Toml)?;
            check_manifest(&text, Format::Json)
        },
    );
    fuzz(
        "manifest checker (shipped, one value changed)",
        3_000,
        file!(),
        mutated_manifest(),
        |text| check_manifest(&text, Format::Toml),
    );
}

/// A number as a manifest author (or an attacker) might write one: often
/// a sound one, so that whole manifests check too.
fn manifest_number() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => (1u32..5_000).prop_map(|i| i.to_string()),
        1 => any::<f64>().prop_map(|f| format!("{f:e}")),
        1 => any::<i64>().prop_map(|i| i.to_string()),
        1 => (0u32..20_000).prop_map(|i| format!("{}.{}", i / 1000, i % 1000)),
        1 => Just("1e-30".to_owned()),
        1 => Just("1e308".to_owned()),
        1 => Just("nan".to_owned()),
        1 => Just("inf".to_owned()),
        1 => Just("-0.0".to_owned()),
        1 => Just("4294967296".to_owned()),
    ]
}

#[test]
fn fuzz_manifest_numbers() {
    let hints = "rate_hints = { per_second = 2.0, daily_cap = 5000 }";
    let base = SHIPPED.replacen(
        hints,
        "rate_hints = { per_second = PS, daily_cap = CAP }\ncost = { per_call = PRICE, unit = \"USD\" }",
        1,
    );
    assert!(
        base.contains("PS"),
        "the seed's rate hints are where they were"
    );
    assert!(
        Manifest::parse(
            &base
                .replace("PS", "2")
                .replace("CAP", "10")
                .replace("PRICE", "1"),
            Format::Toml
        )
        .is_ok(),
        "the seed with sound numbers checks"
    );
    let checked = std::sync::atomic::AtomicUsize::new(0);
    fuzz(
        "manifest numbers (rate hints, caps, prices), registered",
        2_000,
        file!(),
        (manifest_number(), manifest_number(), manifest_number()),
        |(ps, cap, price)| {
            let text = base
                .replace("PS", &ps)
                .replace("CAP", &cap)
                .replace("PRICE", &price);
            match Manifest::parse(&text, Format::Toml) {
                Ok(manifest) => {
                    checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    // What checks must register, throttle and all, without a panic.
                    let hints = manifest.spec.profile.rate_hints;
                    if let Some(ps) = hints.per_second {
                        prop_assert!((model::MIN_PER_SECOND..=model::MAX_PER_SECOND).contains(&ps));
                        prop_assert!(
                            crate::execution::throttle::Throttle::new(ps).is_some(),
                            "{ps}"
                        );
                    }
                    prop_assert!(hints.daily_cap.is_none_or(|c| c <= model::MAX_DAILY_CAP));
                }
                Err(e) => {
                    for p in &e.0 {
                        prop_assert!(!p.field.is_empty() && !p.message.is_empty(), "{p:?}");
                    }
                }
            }
            Ok(())
        },
    );
    assert!(
        checked.into_inner() > 0,
        "no generated manifest checked: the target tests nothing"
    );
}

#[test]
fn fuzz_manifest_templates() {
    let template = prop_oneof![
        "\\PC{0,40}",
        "[a-z ]{0,8}\\{\\{(query|max_results|record\\.name|record\\.[a-z]{1,6}|secret\\.[A-Z_]{1,6}|[a-z.]{0,8})\\}\\}[a-z ]{0,8}",
        "\\{\\{[^}]{0,10}",
    ];
    let fields = proptest::collection::btree_map("[a-z]{1,6}", "\\PC{0,20}", 0..4);
    fuzz(
        "manifest templates",
        3_000,
        file!(),
        (template, "\\PC{0,30}", fields, "\\PC{0,20}"),
        |(template, query, record, name): (String, String, BTreeMap<String, String>, String)| {
            let secret = |var: &str| (var == "KEY").then(|| "sk-fuzz-secret".to_owned());
            if let Ok(out) = render(&template, &query, 10, &record, &name, &secret) {
                // A secret appears only where the template asked for one.
                prop_assert!(
                    !out.contains("sk-fuzz-secret") || template.contains("{{secret.KEY}}"),
                    "{out}"
                );
            }
            Ok(())
        },
    );
}

/// Whether `text` holds something like `<b>` or `</b>`.
fn has_tag(text: &str) -> bool {
    text.split('<').skip(1).any(|after| {
        let name = after.trim_start_matches('/');
        let letters = name.chars().take_while(char::is_ascii_alphabetic).count();
        letters > 0 && name[letters..].starts_with('>')
    })
}

#[test]
fn fuzz_jsonpath_mapping() {
    let shipped: Vec<Manifest> = [
        include_str!("../../connectors/hn-algolia.toml"),
        include_str!("../../connectors/github-users.toml"),
        include_str!("../../connectors/mastodon-accounts.toml"),
    ]
    .iter()
    .map(|t| Manifest::parse(t, Format::Toml).expect("shipped manifests check"))
    .collect();
    fuzz("JSONPath mapping", 2_000, file!(), json(6, 200), |answer| {
        prop_assume!(over_node_limit(&answer).is_none());
        for manifest in &shipped {
            let page = map_page(manifest, &answer);
            prop_assert!(page.results.len() <= page.items);
            for r in &page.results {
                prop_assert!(
                    r.url.starts_with("http://") || r.url.starts_with("https://"),
                    "{}",
                    r.url
                );
                prop_assert!(!has_tag(&r.title), "markup kept: {}", r.title);
                prop_assert!(!has_tag(&r.snippet), "markup kept: {}", r.snippet);
            }
        }
        Ok(())
    });
}

#[test]
fn fuzz_url_identity() {
    let url = prop_oneof![
        "\\PC{0,60}",
        "(https?|ftp|javascript)://(www\\.)?[a-zA-Z0-9.-]{0,12}(:[0-9]{1,5})?(/[a-zA-Z0-9%._~-]{0,8}){0,3}(\\?[a-z_]{1,6}=[a-z0-9]{0,4}(&[a-z_]{1,6}=[a-z0-9]{0,4}){0,3})?(#[a-z]{0,4})?",
    ];
    fuzz("URL identity", 3_000, file!(), url, |raw| {
        if let Some(parsed) = parse_web_url(&raw) {
            prop_assert!(matches!(parsed.scheme(), "http" | "https"));
            let key = url_key(&parsed);
            // The key of a URL's own text is the same key.
            let again = parse_web_url(parsed.as_str()).expect("a parsed URL parses again");
            prop_assert_eq!(url_key(&again), key);
        }
        Ok(())
    });
}
