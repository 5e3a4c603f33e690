//! The `switchyard` binary as an operator runs it: from any folder it finds
//! the site built beside it and serves its files (precompressed); without
//! one it refuses to start and says where it looked.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::real::Served;

/// A fresh empty folder under the system's temporary one.
fn empty_folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("switchyard-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `switchyard serve` started in `cwd` by the binary at `exe`.
fn serve_in(exe: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.current_dir(cwd)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("DATABASE_URL", format!("sqlite://{}/sy.db", cwd.display()))
        .env("RUST_BACKTRACE", "0")
        .env_remove("LEPTOS_SITE_ROOT")
        .env_remove("SWITCHYARD_PUBLIC_URL");
    cmd
}

/// Runs a `serve` that must refuse to start; answers what it said.
fn refused(mut cmd: Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().expect("switchyard runs");
    assert!(!out.status.success(), "it started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn started_from_any_folder_it_serves_its_site_precompressed() {
    let cwd = empty_folder("elsewhere");
    let served = Served::start(
        serve_in(Path::new(env!("CARGO_BIN_EXE_switchyard")), &cwd),
        "elsewhere",
    );
    let http = reqwest::Client::builder().no_brotli().build().unwrap();
    let page = http
        .get(format!("{}/sign-in", served.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let files: Vec<&str> = page
        .split('"')
        .filter(|s| s.starts_with("/pkg/") && (s.ends_with(".css") || s.ends_with(".js")))
        .collect();
    assert!(files.len() >= 2, "the page names its css and js: {page}");
    for file in files {
        let res = http
            .get(format!("{}{file}", served.url))
            .header("accept-encoding", "br, gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{file}\n{}", served.log());
        assert_eq!(res.headers()["content-encoding"], "br", "{file}");
    }
    drop(served);
    std::fs::remove_dir_all(&cwd).unwrap();
}

#[test]
fn without_a_site_it_refuses_to_start_and_says_where_it_looked() {
    let cwd = empty_folder("no-site");
    // A site root named by the operator that holds no site.
    let mut named = serve_in(Path::new(env!("CARGO_BIN_EXE_switchyard")), &cwd);
    named.arg("--site-root").arg(&cwd);
    let said = refused(named);
    assert!(said.contains(&cwd.display().to_string()), "{said}");
    assert!(said.contains("no built site"), "{said}");

    // The binary alone in a folder, started there: nothing beside it.
    let alone = cwd.join("bin");
    std::fs::create_dir_all(&alone).unwrap();
    let exe = alone.join("switchyard");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_switchyard"), &exe).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_switchyard"), &exe).unwrap();
    }
    let said = refused(serve_in(&exe, &cwd));
    for place in [
        alone.join("site"),
        cwd.join("site"),
        cwd.join("target/site"),
    ] {
        assert!(
            said.contains(&place.display().to_string()),
            "{place:?}: {said}"
        );
    }
    assert!(
        !cwd.join("sy.db").exists(),
        "it refused before touching the database"
    );
    std::fs::remove_dir_all(&cwd).unwrap();
}
