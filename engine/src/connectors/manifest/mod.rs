//! Declarative connectors: a manifest (TOML, or JSON through the API)
//! describes an HTTP connector completely — who it is, what it serves, how to
//! build the request from the query and the record, where the results are in
//! the answer (JSONPath), how to page and how to read errors. A manifest is
//! checked whole before anything registers; every mistake is reported with
//! its field path, what is wrong and what is expected.
//!
//! ```toml
//! id = "hn-algolia"
//! display_name = "Hacker News (Algolia)"
//! short_label = "HN"
//! capabilities = ["search.news"]
//! cost_tier = "free"
//!
//! [request]
//! url = "https://hn.algolia.com/api/v1/search"
//! query = { query = "{{query}}", hitsPerPage = "{{max_results}}" }
//!
//! [response]
//! items = "$.hits[*]"
//! url = "$.url"
//! title = "$.title"
//! ```

mod compile;
mod field;
mod fire;
pub mod folder;
mod pool;
pub mod saved;
pub(crate) mod workspace;

use std::collections::{BTreeMap, BTreeSet};

use model::template::{self, Piece, Placeholder};
use model::ConnectorProfile;
use serde::{Deserialize, Serialize};
use serde_json_path::JsonPath;

use compile::compile;
use field::Field;
pub use field::FieldSpec;

pub use fire::ManifestConnector;
#[cfg(test)]
pub(crate) use fire::{map_page, over_node_limit};
pub use model::Problem;
pub(crate) use workspace::report;
pub use workspace::SaveError;

use crate::connectors::registry::Registration;

/// The most pages one fire may read.
pub const MAX_PAGES: u32 = 10;
/// The longest JSONPath a manifest may give.
pub const MAX_PATH_CHARS: usize = 300;

/// A manifest as written: who the connector is, as every connector declares
/// it, and how it is called and read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ManifestSpec {
    #[serde(flatten)]
    pub profile: ConnectorProfile,
    #[serde(flatten)]
    pub http: HttpSpec,
}

/// How a manifest's connector is called and read: the part of a manifest
/// that is not its [`ConnectorProfile`]. Neither half refuses keys it does
/// not know; [`Manifest::parse`] refuses a key that both leave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HttpSpec {
    /// Settings it reads when they are set (from the server's environment);
    /// unset, `{{secret.NAME}}` is empty and a query parameter that is only
    /// empty optional settings is left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional_env: Vec<String>,
    pub request: RequestSpec,
    pub response: ResponseSpec,
    #[serde(default)]
    pub pagination: Option<PaginationSpec>,
    /// Answers that mean something other than their HTTP status says, first
    /// match wins; everything else is read by the usual HTTP contract.
    #[serde(default)]
    pub errors: Vec<ErrorRule>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    #[serde(default = "get")]
    pub method: String,
    /// The address; placeholders may appear in its path and query only.
    pub url: String,
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body (POST only); placeholders may appear in its strings.
    #[serde(default)]
    pub body: Option<serde_json::Value>,
}

fn get() -> String {
    "GET".to_owned()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseSpec {
    /// JSONPath to the result list, e.g. `$.hits[*]`.
    pub items: String,
    /// How to read each field of one item (see [`field`]).
    pub url: FieldSpec,
    pub title: FieldSpec,
    #[serde(default)]
    pub snippet: Option<FieldSpec>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageKind {
    /// `param` is a page number counting from `start`.
    Page,
    /// `param` is how many items to skip.
    Offset,
    /// `param` is the value `cursor_path` found in the previous answer.
    Cursor,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaginationSpec {
    pub kind: PageKind,
    pub param: String,
    /// The first page's number (`page` only).
    #[serde(default)]
    pub start: u64,
    /// At most this many requests per fire (1 to 10).
    pub max_pages: u32,
    /// JSONPath to the next cursor (`cursor` only).
    #[serde(default)]
    pub cursor_path: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Meaning {
    RateLimited,
    AuthFailed,
    /// Nothing found: an empty result, not an error.
    NotFound,
    Upstream,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorRule {
    #[serde(default)]
    pub status: Option<u16>,
    /// Text the answer's body contains.
    #[serde(default)]
    pub body_contains: Option<String>,
    pub means: Meaning,
}

/// A checked manifest, ready to fire.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub spec: ManifestSpec,
    /// What this version of the manifest is, for receipts: the first 12 hex
    /// digits of the SHA-256 of its checked content (TOML or JSON alike).
    pub digest: String,
    items: JsonPath,
    url: Field,
    title: Field,
    snippet: Option<Field>,
    cursor: Option<JsonPath>,
}

/// The first 12 hex digits of the SHA-256 of a manifest's content.
fn digest(spec: &ManifestSpec) -> String {
    use sha2::{Digest, Sha256};
    let canonical = serde_json::to_vec(spec).unwrap_or_default();
    Sha256::digest(&canonical)
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every mistake found in a manifest.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct ManifestError(pub Vec<Problem>);

/// How a manifest is written.
pub use model::ManifestFormat as Format;

impl Manifest {
    /// Parses and checks a manifest. Its two halves, the profile and how it
    /// is called, are read apart so that a mistake in either keeps its place
    /// in the text; a key neither half knows is a mistake too.
    pub fn parse(text: &str, format: Format) -> Result<Self, ManifestError> {
        let mut problems = Vec::new();
        let mut profile_ignores = BTreeSet::new();
        let mut http_ignores = BTreeSet::new();
        let profile = read::<ConnectorProfile>(text, format, &mut profile_ignores)
            .map_err(|p| problems.push(p))
            .ok();
        let http = read::<HttpSpec>(text, format, &mut http_ignores)
            .map_err(|p| {
                // A text that does not parse says so once, not once a half.
                if !problems.contains(&p) {
                    problems.push(p);
                }
            })
            .ok();
        for key in profile_ignores.intersection(&http_ignores) {
            problems.push(Problem {
                field: match format {
                    Format::Toml => top_level_line(text, key)
                        .map_or_else(|| key.clone(), |line| format!("{key} (line {line})")),
                    Format::Json => key.clone(),
                },
                message: "not a manifest key: misspelt, or meant for a table such as [request]?"
                    .to_owned(),
            });
        }
        match (profile, http) {
            (Some(profile), Some(http)) if problems.is_empty() => {
                Self::check(ManifestSpec { profile, http })
            }
            (profile, Some(http)) => {
                // Whatever else is wrong, the calling half's mistakes are
                // named too, with the settings the text requires.
                let requires_env = match profile {
                    Some(profile) => {
                        problems.extend(profile.problems());
                        profile.requires_env
                    }
                    None => read::<RequiredSettings>(text, format, &mut BTreeSet::new())
                        .map(|r| r.requires_env)
                        .unwrap_or_default(),
                };
                compile(&http, &requires_env, &mut problems);
                Err(ManifestError(problems))
            }
            (_, None) => Err(ManifestError(problems)),
        }
    }

    /// Checks a parsed manifest, collecting every mistake.
    pub fn check(spec: ManifestSpec) -> Result<Self, ManifestError> {
        let mut problems = spec.profile.problems();
        let compiled = compile(&spec.http, &spec.profile.requires_env, &mut problems);
        match compiled {
            Some(c) if problems.is_empty() => Ok(Manifest {
                digest: digest(&spec),
                items: c.items,
                url: c.url,
                title: c.title,
                snippet: c.snippet,
                cursor: c.cursor,
                spec,
            }),
            _ => Err(ManifestError(problems)),
        }
    }

    /// What the registry is told about this connector.
    pub fn registration(&self) -> Registration {
        Registration {
            profile: self.spec.profile.clone(),
            suspends_on_errors: true,
        }
    }
}

/// The settings a manifest requires, read alone when its profile does not
/// read.
#[derive(Deserialize)]
struct RequiredSettings {
    #[serde(default)]
    requires_env: Vec<String>,
}

/// Reads `T` from a manifest's text, adding the top-level keys it does not
/// know to `ignored`; a mistake is named by its field (TOML) or line (JSON).
fn read<T: serde::de::DeserializeOwned>(
    text: &str,
    format: Format,
    ignored: &mut BTreeSet<String>,
) -> Result<T, Problem> {
    let mut note = |path: serde_ignored::Path| {
        if let serde_ignored::Path::Map {
            parent: serde_ignored::Path::Root,
            key,
        } = path
        {
            ignored.insert(key);
        }
    };
    match format {
        Format::Toml => toml::Deserializer::parse(text)
            .and_then(|de| serde_ignored::deserialize(de, &mut note))
            .map_err(|e| Problem {
                field: e
                    .span()
                    .map_or_else(|| "manifest".to_owned(), |s| toml_field(text, s.start)),
                message: e.message().to_owned(),
            }),
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            serde_ignored::deserialize(&mut de, &mut note)
                .and_then(|value| de.end().map(|()| value))
                .map_err(|e| Problem {
                    field: format!("line {}", e.line()),
                    message: e.to_string(),
                })
        }
    }
}

/// The line of a top-level TOML key (before the first table), if written
/// plainly as `key = ...`.
fn top_level_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .take_while(|line| !line.trim_start().starts_with('['))
        .position(|line| {
            line.split_once('=')
                .is_some_and(|(k, _)| k.trim().trim_matches('"') == key)
        })
        .map(|i| i + 1)
}

/// Where a TOML error is: the key on that line under its table, and the
/// line (`request.method (line 9)`), or just the line.
fn toml_field(text: &str, offset: usize) -> String {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let number = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or_default();
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"'))
        .filter(|k| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
        });
    let Some(key) = key else {
        return format!("line {number}");
    };
    let table = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(['[', ']']).trim());
    match table {
        Some(t) if !t.is_empty() => format!("{t}.{key} (line {number})"),
        _ => format!("{key} (line {number})"),
    }
}

/// Why a template could not be filled.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RenderError {
    #[error("{0} is not set")]
    MissingSecret(String),
    #[error("{0}")]
    Template(String),
    /// A value that cannot stand where the template puts it (a path
    /// segment of only dots would climb out of the manifest's path).
    #[error("{0}")]
    Unplaceable(String),
}

/// Fills a template's placeholders with their values as they are (for a
/// header, a query parameter's value, which the URL encodes, or a body).
pub(crate) fn render(
    text: &str,
    query: &str,
    max_results: usize,
    record: &BTreeMap<String, String>,
    record_name: &str,
    secret: &dyn Fn(&str) -> Option<String>,
) -> Result<String, RenderError> {
    render_in(false, text, query, max_results, record, record_name, secret)
}

/// Fills a request address's placeholders, each value percent-encoded for
/// its place: one path segment before the template's `?`, a query
/// component after it. A record named `../../admin?x=1#` stays inside the
/// path the manifest names, and never reaches another endpoint of the
/// provider with the manifest's key.
pub(crate) fn render_url(
    text: &str,
    query: &str,
    max_results: usize,
    record: &BTreeMap<String, String>,
    record_name: &str,
) -> Result<String, RenderError> {
    render_in(true, text, query, max_results, record, record_name, &|_| {
        None
    })
}

fn render_in(
    url: bool,
    text: &str,
    query: &str,
    max_results: usize,
    record: &BTreeMap<String, String>,
    record_name: &str,
    secret: &dyn Fn(&str) -> Option<String>,
) -> Result<String, RenderError> {
    let pieces = template::pieces(text).map_err(|e| RenderError::Template(e.to_string()))?;
    let mut out = String::with_capacity(text.len());
    let mut in_query = false;
    for piece in pieces {
        let value = match piece {
            Piece::Text(text) => {
                in_query |= text.contains(['?', '#']);
                out.push_str(text);
                continue;
            }
            Piece::Placeholder(Placeholder::Query) => query.to_owned(),
            Piece::Placeholder(Placeholder::MaxResults) => max_results.to_string(),
            Piece::Placeholder(Placeholder::Record("name")) => record_name.to_owned(),
            Piece::Placeholder(Placeholder::Record(field)) => {
                record.get(field).cloned().unwrap_or_default()
            }
            Piece::Placeholder(Placeholder::Secret(var)) => {
                secret(var).ok_or_else(|| RenderError::MissingSecret(var.to_owned()))?
            }
            Piece::Placeholder(Placeholder::Item(name) | Placeholder::Unknown(name)) => {
                return Err(RenderError::Template(format!(
                    "unknown placeholder {{{{{name}}}}}"
                )))
            }
        };
        match (url, in_query) {
            (false, _) => out.push_str(&value),
            (true, true) => out.push_str(&field::component(&value)),
            (true, false) => {
                if !value.is_empty() && value.bytes().all(|b| b == b'.') {
                    return Err(RenderError::Unplaceable(format!(
                        "{value:?} cannot stand in the address's path"
                    )));
                }
                out.push_str(&field::path_segment(&value));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
