//! The `switchyard` binary run against a test server, as a script runs it.

use std::time::Duration;

use super::TestServer;

/// What a run of the binary left.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub async fn switchyard(server: &TestServer, token: Option<&str>, args: &[&str]) -> Ran {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchyard"));
    command
        .args(args)
        .env("SWITCHYARD_URL", &server.url)
        .env_remove("SWITCHYARD_TOKEN")
        .env("RUST_LOG", "off");
    if let Some(token) = token {
        command.env("SWITCHYARD_TOKEN", token);
    }
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the command ends")
        .expect("the binary runs");
    Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
