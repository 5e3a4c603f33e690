//! Real `switchyard` processes for tests that need the binary itself: one
//! started from a command, its output kept, its address read from its
//! "serving on" line, killed when dropped; an admin and token made with the
//! operator commands; a deployment's files (a manifest and the packs over
//! it); and the parsing of the blocks of a server-sent event stream.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running `switchyard serve`.
pub struct Served {
    pub child: Child,
    /// `http://127.0.0.1:<port>`, no trailing slash.
    pub url: String,
    /// Everything it wrote to standard output and error, line by line.
    pub output: Arc<Mutex<String>>,
}

impl Served {
    /// Starts `cmd` (a `serve` command), prefixing its output lines with
    /// `[name]`, and waits until it serves (at most a minute).
    pub fn start(mut cmd: Command, name: &str) -> Self {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("switchyard starts");
        let output = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let output = output.clone();
            let tx = tx.clone();
            let name = name.to_owned();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if let Some(rest) = line.split("serving on ").nth(1) {
                        let _ = tx.send(rest.trim_end_matches('/').to_owned());
                    }
                    let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                    out.push_str(&format!("[{name}] {line}\n"));
                }
            });
        }
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!(
                    "switchyard {name} did not start:\n{}",
                    output.lock().unwrap_or_else(|e| e.into_inner())
                )
            });
        Self { child, url, output }
    }

    /// Everything it wrote so far.
    pub fn log(&self) -> String {
        self.output
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// SIGKILL: no hand-over, no flush; its leases simply stop being renewed.
    pub fn kill_9(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("the killed process");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Adds `email` as an admin of `workspace` with `password` and issues an
/// API token for them, through the operator commands (`user add`, `token
/// create`); returns the token. `switchyard` makes each command: the binary
/// with its database and environment.
pub fn admin_token(
    switchyard: impl Fn() -> Command,
    email: &str,
    workspace: &str,
    password: &str,
) -> String {
    let mut add = switchyard()
        .args(["user", "add", "--email", email, "--workspace", workspace])
        .args(["--role", "admin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("user add starts");
    add.stdin
        .take()
        .expect("stdin")
        .write_all(format!("{password}\n").as_bytes())
        .expect("the password is piped");
    assert!(add.wait().expect("user add ends").success());
    let created = switchyard()
        .args([
            "token",
            "create",
            "--email",
            email,
            "--workspace",
            workspace,
        ])
        .output()
        .expect("token create runs");
    assert!(created.status.success());
    // The token is the last line (log lines may come before it).
    String::from_utf8_lossy(&created.stdout)
        .lines()
        .last()
        .expect("a token")
        .trim()
        .to_owned()
}

/// Takes the complete event blocks off the front of `buffer`: each one's id
/// and data, keep-alive comments left out.
pub fn sse_blocks(buffer: &mut String) -> Vec<(u64, String)> {
    let mut blocks = Vec::new();
    while let Some(end) = buffer.find("\n\n") {
        let block: String = buffer.drain(..end + 2).collect();
        let mut id = 0;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse().unwrap_or(0);
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim());
            }
        }
        if !data.is_empty() {
            blocks.push((id, data));
        }
    }
    blocks
}

/// The bundle [`write_deployment`] defines: pack `web` over connector `fake`.
pub const BUNDLE: &str = "fake-web";

/// A deployment's files in `dir`: the drop folder `connectors/` holding
/// `fake.toml` (the manifest given), and `packs.toml` with pack `web`
/// (search.web) walking `fake`, in bundle [`BUNDLE`]. Serve with
/// `--connectors dir/connectors --packs dir/packs.toml`.
pub fn write_deployment(dir: &std::path::Path, manifest: &str) {
    std::fs::create_dir_all(dir.join("connectors")).expect("the drop folder");
    std::fs::write(dir.join("connectors/fake.toml"), manifest).expect("the manifest");
    std::fs::write(
        dir.join("packs.toml"),
        format!(
            r#"
[[pack]]
pack_id = "web"
display_name = "Web"
short_label = "w"
intent = "search.web"
preferred_connectors = ["fake"]

[[bundle]]
bundle_id = "{BUNDLE}"
display_name = "Fake web"
members = [{{ pack = "web" }}]
"#
        ),
    )
    .expect("the packs");
}
