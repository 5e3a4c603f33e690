//! Firing a manifest: build each request from the templates, refuse internal
//! targets (the outbound guard), read the answer within the size cap, apply
//! the manifest's error rules before the usual HTTP contract, map the items
//! through JSONPath, and page while results are still wanted.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use model::Capability;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;
use url::Url;

use super::{render, render_url, Manifest, Meaning, PageKind, RenderError};
use crate::connectors::guard::Outbound;
use crate::connectors::http::{
    classify_status, parse_json, plain_text, redact, retry_after, send_capped,
};
use crate::connectors::registry::EnvLookup;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};

/// The largest answer one page may be.
const MAX_BODY: usize = 2 * 1024 * 1024;
/// The most JSON values (objects, arrays, strings, numbers...) one answer
/// may hold before its JSONPath runs over it.
const MAX_NODES: usize = 200_000;
/// The longest mapping one answer may take.
const MAPPING_TIME: Duration = Duration::from_secs(2);
/// The most items one answer may give (each is kept as raw evidence).
const MAX_ITEMS: usize = 1_000;
/// The threads mappings run on, in the process: their own, so costly
/// manifests wait for each other and never take the threads password
/// hashing and imports run on. A mapping cut off at [`MAPPING_TIME`] keeps
/// its thread until it ends (JSONPath without regular expressions, over at
/// most [`MAX_NODES`] values, does end); one still waiting is dropped.
const MAPPINGS_AT_ONCE: usize = 4;
/// The most mapping threads one connector takes at once: a workspace's
/// costly manifest, called a hundred times at once, leaves the other half to
/// everyone else's (its own calls wait, and give up at [`MAPPING_TIME`]).
const MAPPINGS_PER_CONNECTOR: usize = MAPPINGS_AT_ONCE / 2;

fn mapping_pool() -> &'static super::pool::Pool {
    static POOL: std::sync::OnceLock<super::pool::Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| super::pool::Pool::new("mapping", MAPPINGS_AT_ONCE))
}

/// A success answer as it came, before it is read.
struct Answer {
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

/// A manifest as a connector.
pub struct ManifestConnector {
    manifest: Arc<Manifest>,
    outbound: Outbound,
    env: EnvLookup,
    timeout: Duration,
    /// Its share of the mapping threads ([`MAPPINGS_PER_CONNECTOR`]).
    mappings: Arc<tokio::sync::Semaphore>,
}

impl ManifestConnector {
    pub fn new(manifest: Arc<Manifest>, outbound: Outbound, env: EnvLookup) -> Self {
        Self {
            manifest,
            outbound,
            env,
            timeout: Duration::from_secs(15),
            mappings: Arc::new(tokio::sync::Semaphore::new(MAPPINGS_PER_CONNECTOR)),
        }
    }

    /// The same, sharing the mapping threads of every manifest being tried
    /// out (`POST /api/manifests/test`): each test makes a connector, and
    /// many at once still take one connector's share.
    pub fn on_trial(manifest: Arc<Manifest>, outbound: Outbound, env: EnvLookup) -> Self {
        static ON_TRIAL: std::sync::OnceLock<Arc<tokio::sync::Semaphore>> =
            std::sync::OnceLock::new();
        let shared =
            ON_TRIAL.get_or_init(|| Arc::new(tokio::sync::Semaphore::new(MAPPINGS_PER_CONNECTOR)));
        Self {
            mappings: shared.clone(),
            ..Self::new(manifest, outbound, env)
        }
    }

    /// The same connector with another limit on each request.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn who(&self) -> &str {
        &self.manifest.spec.profile.display_name
    }

    /// A secret's value: the firing workspace's, else the server's variable.
    fn secret(&self, name: &str, opts: &FireOpts) -> Option<String> {
        opts.secrets
            .get(name)
            .map(str::to_owned)
            .or_else(|| (self.env)(name))
            .filter(|v| !v.trim().is_empty())
    }

    /// The secret values this manifest uses (optional settings too: one may
    /// be a key), to scrub from every message.
    fn secrets(&self, opts: &FireOpts) -> Vec<String> {
        let spec = &self.manifest.spec;
        spec.profile
            .requires_env
            .iter()
            .chain(&spec.http.optional_env)
            .filter_map(|v| self.secret(v, opts))
            .collect()
    }

    /// Reads one answer (its JSON, its size in values) and maps it through
    /// the manifest's JSONPath, on a mapping thread within [`MAPPING_TIME`]
    /// (waiting for this connector's share of them included): an answer
    /// waits as the bytes it came in, never as its far larger parsed tree,
    /// and a costly manifest holds up neither the runtime, nor others'
    /// mappings, nor the fire past its time.
    async fn map(&self, answer: Answer, secrets: &[&str]) -> Result<MappedPage, FireError> {
        let who = self.who().to_owned();
        let manifest = self.manifest.clone();
        let secrets: Vec<String> = secrets.iter().map(|s| (*s).to_owned()).collect();
        let named = who.clone();
        let read = move || {
            let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
            let answer: Value = parse_json(&named, &answer.headers, &answer.body, &secrets)?;
            if let Some(limit) = over_node_limit(&answer) {
                return Err(FireError::Malformed {
                    reason: format!("{named}: the answer holds more than {limit} JSON values"),
                });
            }
            Ok(map_page(&manifest, &answer))
        };
        let mapping = async {
            let _share = self.mappings.acquire().await;
            mapping_pool().run(read).await
        };
        match tokio::time::timeout(MAPPING_TIME, mapping).await {
            Ok(Ok(read)) => read,
            Ok(Err(e)) => Err(FireError::Malformed {
                reason: format!("{who}: mapping the answer failed: {e}"),
            }),
            Err(_) => Err(FireError::Malformed {
                reason: format!(
                    "{who}: mapping the answer took over {} s; simplify the manifest's JSONPath",
                    MAPPING_TIME.as_secs()
                ),
            }),
        }
    }

    /// The request's address: its URL template and query parameters filled
    /// in (a parameter of only optional settings that are unset is left
    /// out), and the page asked for.
    fn address(
        &self,
        query: &str,
        opts: &FireOpts,
        page_param: Option<(String, String)>,
        fill: &dyn Fn(&str) -> Result<String, FireError>,
    ) -> Result<Url, FireError> {
        let spec = &self.manifest.spec.http.request;
        let optional = &self.manifest.spec.http.optional_env;
        let who = self.who();
        let address = render_url(
            &spec.url,
            query,
            opts.max_results,
            &opts.record_fields,
            &opts.record_name,
        )
        .map_err(|e| unfilled(who, e))?;
        let mut url = Url::parse(&address).map_err(|e| FireError::Malformed {
            reason: format!("{who}: the address is not valid once filled in: {e}"),
        })?;
        {
            let mut pairs = url.query_pairs_mut();
            for (name, value) in &spec.query {
                let filled = fill(value)?;
                if filled.is_empty() && only_optional(value, optional) {
                    continue;
                }
                pairs.append_pair(name, &filled);
            }
            if let Some((name, value)) = &page_param {
                pairs.append_pair(name, value);
            }
        }
        Ok(url)
    }

    /// One request; returns the parsed answer.
    async fn fetch(
        &self,
        query: &str,
        opts: &FireOpts,
        page_param: Option<(String, String)>,
        secrets: &[&str],
    ) -> Result<Option<Answer>, FireError> {
        let spec = &self.manifest.spec.http.request;
        let optional = &self.manifest.spec.http.optional_env;
        let who = self.who();
        let fill = |text: &str| {
            render(
                text,
                query,
                opts.max_results,
                &opts.record_fields,
                &opts.record_name,
                &|var| {
                    self.secret(var, opts)
                        .or_else(|| optional.iter().any(|o| o == var).then(String::new))
                },
            )
            .map_err(|e| unfilled(who, e))
        };
        let url = self.address(query, opts, page_param, &fill)?;
        let method = if spec.method.eq_ignore_ascii_case("POST") {
            reqwest::Method::POST
        } else {
            reqwest::Method::GET
        };
        let mut request = self.outbound.request(who, method, &url, self.timeout)?;
        for (name, value) in &spec.headers {
            let value = fill(value)?;
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) else {
                return Err(FireError::Malformed {
                    reason: format!("{who}: header {name} is not valid once filled in"),
                });
            };
            request = request.header(name, value);
        }
        if let Some(body) = &spec.body {
            request = request.json(&fill_json(body, &fill)?);
        }
        let (status, headers, body) = send_capped(who, request, MAX_BODY, secrets).await?;
        if status.is_redirection() {
            return Err(FireError::Upstream {
                reason: format!(
                    "{who} answered with a redirect (HTTP {}), which is not followed",
                    status.as_u16()
                ),
            });
        }
        if let Some(means) = self.error_rule(status.as_u16(), &body) {
            let reason = redact(
                &format!(
                    "{who} HTTP {}: matched an error rule ({means:?})",
                    status.as_u16()
                ),
                secrets,
            );
            return match means {
                Meaning::NotFound => Ok(None),
                Meaning::RateLimited => Err(FireError::RateLimited {
                    retry_after: retry_after(&headers),
                    reason,
                }),
                Meaning::AuthFailed => Err(FireError::AuthFailed { reason }),
                Meaning::Upstream => Err(FireError::Upstream { reason }),
            };
        }
        if let Some(e) = classify_status(who, status, &headers, &body, secrets) {
            return Err(e);
        }
        // A success that says nothing at all found nothing.
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        Ok(Some(Answer { headers, body }))
    }

    /// What the first of the manifest's error rules that matches an answer
    /// says it means, if one does.
    fn error_rule(&self, status: u16, body: &[u8]) -> Option<Meaning> {
        let rules = &self.manifest.spec.http.errors;
        if rules.is_empty() {
            return None;
        }
        let text = String::from_utf8_lossy(body);
        rules
            .iter()
            .find(|rule| {
                rule.status.is_none_or(|s| s == status)
                    && rule
                        .body_contains
                        .as_deref()
                        .is_none_or(|t| text.contains(t))
            })
            .map(|rule| rule.means)
    }
}

/// Why a template could not be filled, as a fire's failure.
fn unfilled(who: &str, e: RenderError) -> FireError {
    match e {
        // Like a coded adapter without its key.
        RenderError::MissingSecret(_) => FireError::AuthFailed {
            reason: format!("{who}: {e}"),
        },
        RenderError::Template(_) => FireError::Malformed {
            reason: format!("{who}: {e}"),
        },
        // This record's or query's value, not the connector's.
        RenderError::Unplaceable(_) => FireError::Request {
            reason: format!("{who}: {e}"),
        },
    }
}

/// Whether a template is nothing but optional settings (left out when they
/// are all unset).
fn only_optional(template: &str, optional: &[String]) -> bool {
    use model::template::{pieces, Piece, Placeholder};
    pieces(template).is_ok_and(|pieces| {
        !pieces.is_empty()
            && pieces.iter().all(|p| {
                matches!(p, Piece::Placeholder(Placeholder::Secret(v)) if optional.iter().any(|o| o == v))
            })
    })
}

fn fill_json(
    value: &Value,
    fill: &dyn Fn(&str) -> Result<String, FireError>,
) -> Result<Value, FireError> {
    Ok(match value {
        Value::String(s) => Value::String(fill(s)?),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|v| fill_json(v, fill))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| Ok((k.clone(), fill_json(v, fill)?)))
                .collect::<Result<_, FireError>>()?,
        ),
        other => other.clone(),
    })
}

#[async_trait]
impl Connector for ManifestConnector {
    async fn fire(
        &self,
        _intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let secrets = self.secrets(opts);
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
        let manifest = &self.manifest;
        let pagination = manifest.spec.http.pagination.as_ref();
        let pages = pagination.map_or(1, |p| p.max_pages);
        let mut results: Vec<ConnectorResult> = Vec::new();
        let mut next: Option<(String, String)> = pagination.and_then(|p| match p.kind {
            PageKind::Page => Some((p.param.clone(), p.start.to_string())),
            PageKind::Offset => Some((p.param.clone(), "0".to_owned())),
            PageKind::Cursor => None,
        });
        let mut seen = 0usize;
        let mut partial = None;
        for page in 0..pages {
            let read = match self.fetch(query, opts, next.clone(), &secrets).await {
                Ok(None) => break,
                Ok(Some(answer)) => self.map(answer, &secrets).await,
                Err(e) => Err(e),
            };
            let mapped = match read {
                Ok(mapped) => mapped,
                // The first page's failure is the fire's; a later page's
                // leaves what the earlier pages found, marked partial.
                Err(e) if page == 0 => return Err(e),
                Err(e) => {
                    let read = if page == 1 {
                        "the first page was".to_owned()
                    } else {
                        format!("the first {page} pages were")
                    };
                    partial = Some(format!(
                        "page {} of up to {pages} failed, so only {read} read: {e}",
                        page + 1
                    ));
                    break;
                }
            };
            if mapped.items == 0 {
                break;
            }
            seen += mapped.items;
            results.extend(mapped.results);
            if results.len() >= opts.max_results {
                break;
            }
            let Some(p) = pagination else { break };
            next = match p.kind {
                PageKind::Page => {
                    Some((p.param.clone(), (p.start + u64::from(page) + 1).to_string()))
                }
                PageKind::Offset => Some((p.param.clone(), seen.to_string())),
                PageKind::Cursor => match mapped.cursor {
                    Some(c) => Some((p.param.clone(), c)),
                    None => break,
                },
            };
        }
        results.truncate(opts.max_results.max(1));
        Ok(Found { results, partial })
    }

    fn version(&self) -> String {
        format!("manifest {}", self.manifest.digest)
    }
}

/// What one answer gave: its results, how many items it held (results or
/// not, for offset paging), and the cursor to the next page.
#[derive(Debug)]
pub(crate) struct MappedPage {
    pub(crate) results: Vec<ConnectorResult>,
    pub(crate) items: usize,
    pub(crate) cursor: Option<String>,
}

/// `Some(limit)` when `answer` holds more than [`MAX_NODES`] values; stops
/// counting there.
pub(crate) fn over_node_limit(answer: &Value) -> Option<usize> {
    let mut stack = vec![answer];
    let mut count = 0usize;
    while let Some(v) = stack.pop() {
        count += 1;
        if count > MAX_NODES {
            return Some(MAX_NODES);
        }
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    None
}

/// Maps one answer through the manifest's JSONPath (CPU work: callers on
/// the runtime go through `ManifestConnector::map`).
pub(crate) fn map_page(manifest: &Manifest, answer: &Value) -> MappedPage {
    let items: Vec<&Value> = manifest.items.query(answer).all();
    let mut results = Vec::new();
    for item in items.iter().take(MAX_ITEMS) {
        let (Some(url), Some(title)) = (
            manifest.url.read(item, true),
            manifest.title.read(item, false),
        ) else {
            continue;
        };
        let snippet = manifest
            .snippet
            .as_ref()
            .and_then(|f| f.read(item, false))
            .unwrap_or_default();
        results.push(ConnectorResult {
            url,
            title: plain_text(&title),
            snippet: plain_text(&snippet),
            raw: (*item).clone(),
        });
    }
    let cursor = manifest
        .cursor
        .as_ref()
        .and_then(|c| super::field::first_string(c, answer))
        .filter(|c| !c.is_empty());
    MappedPage {
        results,
        items: items.len(),
        cursor,
    }
}
