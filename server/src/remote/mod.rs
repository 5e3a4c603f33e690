//! The scripting door: `switchyard call | fire | fanout | connectors |
//! export` talk to a running server's REST door with an API token
//! (`SWITCHYARD_URL`, `SWITCHYARD_TOKEN`), print for people, or with
//! `--json` the server's own JSON for scripts, and end with an exit code
//! that says what kind of failure it was ([`Exit`]).

use std::io::Write;
use std::time::Duration;

use model::{Envelope, EnvelopeStatus, FireReport, InventoryRow, Job, JobStatus};
use serde::de::DeserializeOwned;

use crate::cli::{ExportArgs, FanoutArgs, FireArgs, RemoteArgs, RemoteCommand};

mod call;

use call::{call, verbs};

/// How a command ended, as its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// The work ran and failed (a call nothing answered, a fire cut short).
    Failed = 1,
    /// The server refused the input; the message names what (clap's own
    /// usage errors are 2 as well).
    BadInput = 2,
    /// No token, a revoked one, or a role that may not do this.
    NotAllowed = 3,
    NotFound = 4,
    /// Someone acted first, or it is not in a state for this.
    Conflict = 5,
    /// A cap or rate limit stops it for now.
    Limited = 6,
    /// The server failed, or could not be reached.
    Unavailable = 7,
    /// A record's daily cap asks before spending more: run again with
    /// `--spend-more` to spend it.
    SpendMore = 8,
    /// Some pages of a `web.scrape` could not be read; the others were.
    SomePagesFailed = 9,
}

impl Exit {
    /// The exit code of an HTTP error status.
    fn of_status(status: u16) -> Self {
        match status {
            401 | 403 => Exit::NotAllowed,
            404 => Exit::NotFound,
            402 => Exit::SpendMore,
            409 => Exit::Conflict,
            429 => Exit::Limited,
            400..=499 => Exit::BadInput,
            _ => Exit::Unavailable,
        }
    }
}

/// What went wrong, for standard error, and its exit code.
struct Failure(Exit, String);

type Outcome = Result<Exit, Failure>;

/// Runs a scripting command; what it prints goes to `out`, failures to
/// standard error.
pub async fn run(command: RemoteCommand, out: &mut impl Write) -> Exit {
    let ended = match command {
        RemoteCommand::Call(args) => call(args, out).await,
        RemoteCommand::Verbs(args) => verbs(args, out).await,
        RemoteCommand::Fire(args) => fire(args, out).await,
        RemoteCommand::Fanout(args) => fanout(args, out).await,
        RemoteCommand::Connectors(args) => connectors(args, out).await,
        RemoteCommand::Export(args) => export(args, out).await,
    };
    let _ = out.flush();
    match ended {
        Ok(exit) => exit,
        Err(Failure(exit, message)) => {
            eprintln!("switchyard: {message}");
            exit
        }
    }
}

/// A running server's REST door, as the token's user.
struct Door {
    http: reqwest::Client,
    base: String,
    json: bool,
}

/// An answer: its status and body text.
struct Answer {
    status: u16,
    text: String,
}

impl Door {
    fn new(args: &RemoteArgs) -> Result<Self, Failure> {
        let token = args.token.as_deref().unwrap_or_default().trim();
        if token.is_empty() {
            return Err(Failure(
                Exit::NotAllowed,
                "set SWITCHYARD_TOKEN (or --token) to an API token: `switchyard token create`"
                    .to_owned(),
            ));
        }
        let mut auth =
            reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                Failure(
                    Exit::BadInput,
                    "the token has characters a token cannot have".to_owned(),
                )
            })?;
        auth.set_sensitive(true);
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, auth);
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| {
                Failure(
                    Exit::Unavailable,
                    format!("cannot make an HTTP client: {e}"),
                )
            })?;
        Ok(Self {
            http,
            base: args.url.trim_end_matches('/').to_owned(),
            json: args.json,
        })
    }

    async fn send(&self, req: reqwest::RequestBuilder, what: &str) -> Result<Answer, Failure> {
        let res = req.send().await.map_err(|e| {
            Failure(
                Exit::Unavailable,
                format!("{what}: cannot reach {}: {e}", self.base),
            )
        })?;
        let status = res.status().as_u16();
        let text = res.text().await.map_err(|e| {
            Failure(
                Exit::Unavailable,
                format!("{what}: the answer broke off: {e}"),
            )
        })?;
        if status >= 400 {
            // The REST door's errors are {error, detail}; anything else
            // (a proxy's page) is shown by its status alone.
            let detail = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["detail"].as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("the server answered HTTP {status}"));
            return Err(Failure(
                Exit::of_status(status),
                format!("{what}: {detail}"),
            ));
        }
        Ok(Answer { status, text })
    }

    async fn get(&self, path: &str, what: &str) -> Result<Answer, Failure> {
        self.send(self.http.get(format!("{}{path}", self.base)), what)
            .await
    }

    async fn post(
        &self,
        path: &str,
        body: serde_json::Value,
        what: &str,
    ) -> Result<Answer, Failure> {
        self.send(
            self.http.post(format!("{}{path}", self.base)).json(&body),
            what,
        )
        .await
    }
}

fn parse<T: DeserializeOwned>(answer: &Answer, what: &str) -> Result<T, Failure> {
    serde_json::from_str(&answer.text).map_err(|e| {
        Failure(
            Exit::Unavailable,
            format!("{what}: the server's answer is not what this version reads: {e}"),
        )
    })
}

fn print(out: &mut impl Write, text: impl std::fmt::Display) -> Result<(), Failure> {
    writeln!(out, "{text}")
        .map_err(|e| Failure(Exit::Failed, format!("cannot write the output: {e}")))
}

/// Provider text on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max).collect::<String>())
    } else {
        flat
    }
}

/// How long to wait between two reads of running work.
const POLL: Duration = Duration::from_millis(500);

async fn fire(args: FireArgs, out: &mut impl Write) -> Outcome {
    let door = Door::new(&args.remote)?;
    let what = format!("fire {} on record {}", args.pack, args.record);
    let mut body = serde_json::json!({ "pack": args.pack });
    if let Some(c) = &args.connector {
        body["connector"] = c.as_str().into();
    }
    if args.spend_more {
        body["spend_more"] = true.into();
    }
    let answer = door
        .post(&format!("/api/records/{}/fire", args.record), body, &what)
        .await?;
    let envelope: Envelope<FireReport> = parse(&answer, &what)?;
    // Every connector tried failed (or the fire was cancelled): exit 1,
    // for scripts reading the JSON too.
    let exit = if envelope.status == EnvelopeStatus::Completed {
        Exit::Ok
    } else {
        Exit::Failed
    };
    if door.json {
        print(out, answer.text.trim_end())?;
        return Ok(exit);
    }
    if let Some(error) = &envelope.error {
        print(out, format!("failed: {error}"))?;
    }
    for report in &envelope.results {
        print(
            out,
            format!(
                "record {}, pack {}: {}",
                report.record_id,
                report.pack_id,
                chip_words(&report.chip)
            ),
        )?;
        for a in &report.attempts {
            let outcome = a.end.outcome.map_or("in flight", |o| o.name());
            let count = a
                .end
                .result_count
                .map(|n| format!(", {n} results"))
                .unwrap_or_default();
            let error = a
                .end
                .error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            print(out, format!("  {} {outcome}{count}{error}", a.connector_id))?;
        }
        for s in &report.skipped {
            print(out, format!("  {} not tried: {}", s.connector_id, s.reason))?;
        }
        for note in &report.notes {
            print(out, format!("  note: {note}"))?;
        }
        for item in &report.items {
            print(
                out,
                format!("  + {} {}", item.url, one_line(&item.title, 80)),
            )?;
        }
    }
    Ok(exit)
}

fn chip_words(chip: &model::ChipState) -> String {
    match chip {
        model::ChipState::Found { count } => format!("found ({count})"),
        other => other.name().replace('_', " "),
    }
}

async fn fanout(args: FanoutArgs, out: &mut impl Write) -> Outcome {
    let door = Door::new(&args.remote)?;
    let what = format!("fan-out over record set {}", args.set);
    let body = if args.pack.is_empty() {
        serde_json::json!({})
    } else {
        serde_json::json!({ "packs": args.pack })
    };
    let mut answer = door
        .post(
            &format!("/api/record-sets/{}/fanout", args.set),
            body,
            &what,
        )
        .await?;
    let mut job = job_of(&answer, &what)?;
    if args.wait {
        let bar = indicatif::ProgressBar::new(job.progress.total);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} fires {msg} ({elapsed})")
        {
            bar.set_style(style);
        }
        while job.status == JobStatus::Running {
            bar.set_position(job.progress.done);
            bar.set_message(format!("{} found", job.found));
            tokio::time::sleep(POLL).await;
            answer = door.get(&format!("/api/jobs/{}", job.id), &what).await?;
            job = job_of(&answer, &what)?;
        }
        bar.finish_and_clear();
    }
    if door.json {
        print(out, answer.text.trim_end())?;
    } else {
        print(
            out,
            format!(
                "job {} {}: {}/{} fires, {} found, {} not found, {} errors",
                job.id,
                job.status.name(),
                job.progress.done,
                job.progress.total,
                job.found,
                job.not_found,
                job.errors
            ),
        )?;
    }
    Ok(match job.status {
        JobStatus::Cancelled => Exit::Failed,
        _ => Exit::Ok,
    })
}

fn job_of(answer: &Answer, what: &str) -> Result<Job, Failure> {
    let envelope: Envelope<FireReport> = parse(answer, what)?;
    envelope.job.ok_or_else(|| {
        Failure(
            Exit::Unavailable,
            format!("{what}: the answer (HTTP {}) carries no job", answer.status),
        )
    })
}

async fn connectors(args: RemoteArgs, out: &mut impl Write) -> Outcome {
    let door = Door::new(&args)?;
    let answer = door.get("/api/connectors", "connectors").await?;
    if door.json {
        print(out, answer.text.trim_end())?;
        return Ok(Exit::Ok);
    }
    let rows: Vec<InventoryRow> = parse(&answer, "connectors")?;
    let width = rows
        .iter()
        .map(|r| r.info.profile.id.len())
        .max()
        .unwrap_or(2)
        .max(2);
    print(
        out,
        format!(
            "{:width$}  {:10}  {:9}  {:>5}  serves",
            "id", "status", "cost", "today"
        ),
    )?;
    for row in rows {
        let info = row.info;
        let serves: Vec<&str> = info.profile.capabilities.iter().map(|c| c.name()).collect();
        print(
            out,
            format!(
                "{:width$}  {:10}  {:9}  {:>5}  {}",
                info.profile.id,
                info.status.kind(),
                info.profile.cost_tier.name(),
                row.fires_today,
                serves.join(" ")
            ),
        )?;
        if let Some(reason) = info.status_reason {
            print(out, format!("{:width$}  ({reason})", ""))?;
        }
    }
    Ok(Exit::Ok)
}

async fn export(args: ExportArgs, out: &mut impl Write) -> Outcome {
    let door = Door::new(&args.remote)?;
    let what = format!("export of record set {}", args.set);
    let answer = door
        .get(
            &format!(
                "/api/record-sets/{}/export?format={}",
                args.set,
                urlencode(&args.format)
            ),
            &what,
        )
        .await?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, answer.text.as_bytes()).map_err(|e| {
                Failure(
                    Exit::Failed,
                    format!("{what}: cannot write {}: {e}", path.display()),
                )
            })?;
            eprintln!(
                "switchyard: wrote {} ({} bytes)",
                path.display(),
                answer.text.len()
            );
        }
        None => out
            .write_all(answer.text.as_bytes())
            .map_err(|e| Failure(Exit::Failed, format!("cannot write the output: {e}")))?,
    }
    Ok(Exit::Ok)
}

/// A path segment or query value with everything but unreserved bytes
/// percent-encoded.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_http_failure_has_its_exit_code() {
        assert_eq!(Exit::of_status(401), Exit::NotAllowed);
        assert_eq!(Exit::of_status(403), Exit::NotAllowed);
        assert_eq!(Exit::of_status(404), Exit::NotFound);
        assert_eq!(Exit::of_status(409), Exit::Conflict);
        assert_eq!(Exit::of_status(429), Exit::Limited);
        assert_eq!(Exit::of_status(402), Exit::SpendMore);
        assert_eq!(Exit::of_status(400), Exit::BadInput);
        assert_eq!(Exit::of_status(422), Exit::BadInput);
        assert_eq!(Exit::of_status(500), Exit::Unavailable);
        assert_eq!(Exit::of_status(502), Exit::Unavailable);
    }

    #[test]
    fn provider_text_is_one_short_line() {
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(urlencode("search.news"), "search.news");
        assert_eq!(urlencode("a b/c"), "a%20b%2Fc");
    }
}
