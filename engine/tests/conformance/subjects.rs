//! What the suite runs (every coded adapter and every manifest shipped),
//! how it reaches the fake, and the key it is given, which must never show
//! in anything it returns or logs.

use std::sync::Arc;
use std::time::Duration;

use engine::connectors::builtin::{adapters, site, Adapter};
use engine::connectors::guard::{AllowList, Outbound};
use engine::connectors::http::Http;
use engine::connectors::manifest::{Format, Manifest, ManifestConnector};
use engine::connectors::registry::Registration;
use engine::connectors::seam::{FireError, FireOpts, Found};
use model::Capability;

use crate::fake::{start_fake, Answer, Seen};
use crate::fixtures::Fixture;

/// The key each adapter is given: it must never show in what it returns or logs.
pub(crate) const KEY: &str = "sk-conformance-SECRET-4711";

/// What a mode sets of the client: a timeout, a cap on the body (a
/// manifest keeps its own cap).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Limits {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_body: Option<usize>,
}

/// What the suite runs: a coded adapter, a manifest shipped in
/// `connectors/` with its provider's origin pointed at the fake, or the
/// site crawler, reading the fake as a record's website.
pub(crate) enum Subject {
    Coded(Adapter),
    Site,
    Shipped {
        file: String,
        manifest: String,
        origin: String,
    },
}

impl Subject {
    pub(crate) fn registration(&self) -> Registration {
        match self {
            Subject::Coded(adapter) => (adapter.registration)(),
            Subject::Site => site::registration(),
            Subject::Shipped { manifest, .. } => Manifest::parse(manifest, Format::Toml)
                .expect("a shipped manifest")
                .registration(),
        }
    }

    /// What a fire asks with the fake at `base`: the fixture's query, or
    /// for the site crawler the fake's address, its record's website.
    pub(crate) fn query(&self, fixture: &Fixture, base: &str) -> String {
        match self {
            Subject::Site => format!("{base}/"),
            _ => fixture.query.to_owned(),
        }
    }

    /// The connector, asking the fake at `base`.
    pub(crate) fn connector(
        &self,
        limits: Limits,
        base: &str,
    ) -> Arc<dyn engine::connectors::seam::Connector> {
        match self {
            Subject::Coded(adapter) => {
                let mut http = match limits.timeout {
                    Some(t) => Http::with_timeout(t).unwrap(),
                    None => Http::new().unwrap(),
                };
                if let Some(max) = limits.max_body {
                    http = http.with_max_body(max);
                }
                adapter.connector(http, Some(base.to_owned()), Some(KEY.to_owned()))
            }
            // Its own cap on a page's size; the fake is its only site.
            Subject::Site => Arc::new(site::SiteCrawler {
                outbound: Outbound::new(AllowList::parse("127.0.0.1")),
                timeout: limits.timeout,
            }),
            Subject::Shipped {
                manifest, origin, ..
            } => {
                // The request's address only: a result's address may name
                // the same host.
                let text =
                    manifest.replacen(&format!("url = \"{origin}"), &format!("url = \"{base}"), 1);
                let manifest = Manifest::parse(&text, Format::Toml).expect("a shipped manifest");
                // The key for what it requires; optional settings unset.
                let required = manifest.spec.profile.requires_env.clone();
                let connector = ManifestConnector::new(
                    Arc::new(manifest),
                    Outbound::new(AllowList::parse("127.0.0.1")),
                    Arc::new(move |name| {
                        required.iter().any(|r| r == name).then(|| KEY.to_owned())
                    }),
                );
                Arc::new(match limits.timeout {
                    Some(t) => connector.with_timeout(t),
                    None => connector,
                })
            }
        }
    }
}

/// Every coded adapter, the site crawler, every manifest built in, and
/// every manifest shipped in `connectors/`.
pub(crate) fn subjects() -> Vec<Subject> {
    let mut all: Vec<Subject> = adapters().into_iter().map(Subject::Coded).collect();
    all.push(Subject::Site);
    let mut manifests: Vec<(String, String)> = engine::connectors::builtin::BUILTIN_MANIFESTS
        .iter()
        .map(|(file, text)| (format!("engine/manifests/{file}"), (*text).to_owned()))
        .collect();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../connectors");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        manifests.push((
            format!("connectors/{name}"),
            std::fs::read_to_string(&file).unwrap(),
        ));
    }
    for (file, manifest) in manifests {
        let at = manifest.find("url = \"https://").expect("a request URL") + "url = \"".len();
        let rest = &manifest[at..];
        let end = rest["https://".len()..]
            .find('/')
            .map_or(rest.len(), |i| i + "https://".len());
        let origin = rest[..end].to_owned();
        all.push(Subject::Shipped {
            file,
            manifest,
            origin,
        });
    }
    all
}

pub(crate) fn opts() -> FireOpts {
    FireOpts {
        max_results: 10,
        ..FireOpts::default()
    }
}

/// Nothing the adapter hands back may carry the key.
pub(crate) fn assert_no_key(what: &str, outcome: &Result<Found, FireError>) {
    let text = format!(
        "{outcome:?} {}",
        outcome
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    assert!(!text.contains(KEY), "{what}: the key leaked: {text}");
}

pub(crate) async fn fire_with(
    subject: &Subject,
    fixture: &Fixture,
    answers: Vec<(&'static str, Answer)>,
    limits: Limits,
) -> (Result<Found, FireError>, Vec<Seen>) {
    let (base, fake) = start_fake().await;
    *fake.answers.lock().unwrap() = answers;
    let connector = subject.connector(limits, &base);
    let intent: Capability = fixture.intent.parse().unwrap();
    let outcome = connector
        .fire(&intent, &subject.query(fixture, &base), &opts())
        .await;
    let seen = fake.seen.lock().unwrap().clone();
    (outcome, seen)
}
