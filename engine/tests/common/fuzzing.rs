//! What every fuzz target shares: the runner (cases counted and printed,
//! failures kept as regression seeds beside the calling file) and arbitrary
//! JSON shaped like providers' answers. Used by `src/fuzz.rs` and by the
//! adapters' half in `tests/conformance.rs`.
#![allow(dead_code)] // each user takes a different part

use std::fmt::Debug;

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use serde_json::Value;

/// Runs `check` over `cases` values of `strategy`, replaying the seeds kept
/// for `source_file` (pass `file!()`) first, and says how many held.
pub fn fuzz<S>(
    name: &str,
    cases: u32,
    source_file: &'static str,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S: Strategy,
    S::Value: Debug,
{
    let config = Config {
        cases,
        source_file: Some(source_file),
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
            "proptest-regressions",
        ))),
        ..Config::default()
    };
    match TestRunner::new(config).run(&strategy, check) {
        Ok(()) => eprintln!("fuzz {name}: {cases} cases, none failed"),
        Err(e) => panic!("fuzz {name}: {e}"),
    }
}

/// Arbitrary JSON up to `depth` levels and about `nodes` values, with the
/// keys and strings providers' answers hold (links, markup, script URLs).
pub fn json(depth: u32, nodes: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop_oneof![
            "\\PC{0,20}",
            "https?://[a-z]{1,8}\\.example/[a-z]{0,6}",
            "(javascript|data):[a-z]{0,10}",
            "<[a-z]{1,6}>[a-z]{0,8}</[a-z]{1,6}>",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, nodes, 8, |inner| {
        let key = prop_oneof![
            Just("hits".to_owned()),
            Just("url".to_owned()),
            Just("title".to_owned()),
            Just("story_text".to_owned()),
            Just("objectID".to_owned()),
            Just("data".to_owned()),
            Just("items".to_owned()),
            "[a-z_]{1,10}",
        ];
        prop_oneof![
            vec(inner.clone(), 0..8).prop_map(Value::Array),
            btree_map(key, inner, 0..8).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
