//! The release `switchyard serve` as the live benchmarks run it: on a
//! database they made, with a deployment's drop folder and packs, and
//! people who each hold an API token.
#![allow(dead_code)] // each benchmark uses a different part of it

use std::path::Path;
use std::process::Command;

use crate::real::Served;

/// The release server on `database_url`, with the deployment in `dir`.
/// `SERVER_UNDER="heaptrack -o /tmp/x"` runs it under a profiler (its
/// memory figures are then the profiler's); `SERVER_LOG` is its `RUST_LOG`
/// (warnings only unless set).
pub fn serve(database_url: &str, dir: &Path, name: &str) -> Served {
    let mut cmd = match std::env::var("SERVER_UNDER") {
        Ok(under) if !under.trim().is_empty() => {
            let mut words = under.split_whitespace();
            let mut cmd = Command::new(words.next().unwrap_or_default());
            cmd.args(words).arg(env!("CARGO_BIN_EXE_switchyard"));
            cmd
        }
        _ => Command::new(env!("CARGO_BIN_EXE_switchyard")),
    };
    cmd.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("DATABASE_URL", database_url)
        .env("SWITCHYARD_FETCH_ALLOW", "127.0.0.1")
        .env(
            "RUST_LOG",
            std::env::var("SERVER_LOG").unwrap_or_else(|_| "warn".into()),
        )
        // One token reads as fast as the server answers: what is measured
        // is the server's work, not the per-token limit (100 a second),
        // which a fast read series reaches.
        .env("SWITCHYARD_TOKEN_REQUESTS_PER_SECOND", "1000000")
        .env_remove("SWITCHYARD_PUBLIC_URL")
        .args(["serve", "--addr", "127.0.0.1:0"])
        .arg("--connectors")
        .arg(dir.join("connectors"))
        .arg("--packs")
        .arg(dir.join("packs.toml"));
    Served::start(cmd, name)
}

/// `people` members of workspace `workspace`, each with an API token (the
/// tokens, in order): `person{n}@{workspace}.example`.
pub async fn tokens(database_url: &str, workspace: &str, people: usize) -> Vec<String> {
    let store = engine::store::Store::connect(database_url)
        .await
        .expect("the database");
    let engine = engine::Engine::new(
        store,
        engine::packs::Catalog::builtin(),
        None,
        engine::EngineConfig::default(),
    );
    let mut tokens = Vec::with_capacity(people);
    for n in 0..people {
        let email = format!("person{n}@{workspace}.example");
        engine
            .add_user(&email, workspace, model::Role::Member, None)
            .await
            .expect("a person");
        tokens.push(
            engine
                .create_token(&email, workspace)
                .await
                .expect("a token")
                .1,
        );
    }
    tokens
}

/// Imports set `name` of `records` records named `Company {i}` through
/// REST as `token`'s holder (or as whoever `http` is signed in as, without
/// one): the set's id and its records' ids in order.
pub async fn import_companies(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    name: &str,
    records: usize,
) -> (i64, Vec<i64>) {
    let as_holder = |request: reqwest::RequestBuilder| match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    let mut csv = String::from("name,city\n");
    for i in 0..records {
        csv.push_str(&format!("Company {i},City {}\n", i % 50));
    }
    let set: serde_json::Value = as_holder(http.post(format!("{url}/api/record-sets")))
        .query(&[("name", name), ("bundle", crate::real::BUNDLE)])
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .await
        .expect("import")
        .json()
        .await
        .expect("the set");
    let set = set["id"].as_i64().expect("a set id");
    let mut ids = Vec::with_capacity(records);
    while ids.len() < records {
        let page: serde_json::Value = as_holder(http.get(format!(
            "{url}/api/record-sets/{set}/records?limit=500&offset={}",
            ids.len()
        )))
        .send()
        .await
        .expect("a page")
        .json()
        .await
        .expect("JSON");
        let got = page["records"].as_array().cloned().unwrap_or_default();
        assert!(!got.is_empty(), "the set's records: {page}");
        ids.extend(got.iter().filter_map(|r| r["id"].as_i64()));
    }
    (set, ids)
}
