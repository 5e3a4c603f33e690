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

mod field;
mod fire;
pub mod folder;
mod workspace;

use std::collections::BTreeMap;

use model::template::{self, Piece, Placeholder};
use model::{Capability, CostTier, RateHints};
use serde::{Deserialize, Serialize};
use serde_json_path::JsonPath;

use field::Field;
pub use field::FieldSpec;

pub use fire::ManifestConnector;
#[cfg(test)]
pub(crate) use fire::{map_page, over_node_limit};
pub use model::Problem;
pub use workspace::SaveError;
pub(crate) use workspace::{probe, report};

use crate::registry::Registration;

/// The most pages one fire may read.
pub const MAX_PAGES: u32 = 10;
/// The longest JSONPath a manifest may give.
pub const MAX_PATH_CHARS: usize = 300;

/// A manifest as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestSpec {
    pub id: String,
    pub display_name: String,
    pub short_label: String,
    pub capabilities: Vec<String>,
    pub cost_tier: CostTier,
    /// Secrets and settings it needs, by name (`{{secret.NAME}}` reads them).
    #[serde(default)]
    pub requires_env: Vec<String>,
    /// Settings it reads when they are set (from the server's environment);
    /// unset, `{{secret.NAME}}` is empty and a query parameter that is only
    /// empty optional settings is left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optional_env: Vec<String>,
    #[serde(default)]
    pub rate_hints: RateHints,
    /// What a call costs, e.g. `cost = { per_call = 0.005, unit = "USD" }`.
    #[serde(default)]
    pub cost: Option<model::Cost>,
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
    capabilities: Vec<Capability>,
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

impl ManifestError {
    fn one(field: &str, message: impl Into<String>) -> Self {
        Self(vec![Problem {
            field: field.to_owned(),
            message: message.into(),
        }])
    }
}

/// How a manifest is written.
pub use model::ManifestFormat as Format;

impl Manifest {
    /// Parses and checks a manifest.
    pub fn parse(text: &str, format: Format) -> Result<Self, ManifestError> {
        let spec: ManifestSpec = match format {
            Format::Toml => toml::from_str(text).map_err(|e| {
                let field = e
                    .span()
                    .map_or_else(|| "manifest".to_owned(), |s| toml_field(text, s.start));
                ManifestError::one(&field, e.message().to_owned())
            })?,
            Format::Json => serde_json::from_str(text)
                .map_err(|e| ManifestError::one(&format!("line {}", e.line()), e.to_string()))?,
        };
        Self::check(spec)
    }

    /// Checks a parsed manifest, collecting every mistake.
    pub fn check(spec: ManifestSpec) -> Result<Self, ManifestError> {
        let mut problems = Vec::new();
        let mut bad = |field: &str, message: String| {
            problems.push(Problem {
                field: field.to_owned(),
                message,
            });
        };
        let id_ok = !spec.id.is_empty()
            && spec.id.len() <= 64
            && spec
                .id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !id_ok {
            bad(
                "id",
                format!(
                    "{:?} is not an id: use 1 to 64 of a-z, 0-9, - and _",
                    spec.id
                ),
            );
        }
        if spec.display_name.trim().is_empty() || spec.display_name.chars().count() > 80 {
            bad("display_name", "give 1 to 80 characters".to_owned());
        }
        if spec.short_label.trim().is_empty() || spec.short_label.chars().count() > 16 {
            bad("short_label", "give 1 to 16 characters".to_owned());
        }
        let mut capabilities = Vec::new();
        if spec.capabilities.is_empty() {
            bad("capabilities", "name at least one, e.g. \"search.web\" or a new dotted name like \"community.forum\"".to_owned());
        }
        for (i, name) in spec.capabilities.iter().enumerate() {
            match name.parse::<Capability>() {
                Ok(c) => capabilities.push(c),
                Err(e) => bad(&format!("capabilities[{i}]"), e.to_string()),
            }
        }
        for (list, vars) in [
            ("requires_env", &spec.requires_env),
            ("optional_env", &spec.optional_env),
        ] {
            for (i, var) in vars.iter().enumerate() {
                if var.is_empty()
                    || !var
                        .bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                {
                    bad(
                        &format!("{list}[{i}]"),
                        format!("{var:?} is not a variable name: use A-Z, 0-9 and _"),
                    );
                } else if list == "optional_env" && spec.requires_env.contains(var) {
                    bad(
                        &format!("{list}[{i}]"),
                        format!("{var} is already in requires_env"),
                    );
                }
            }
        }
        let known_env: Vec<String> = spec
            .requires_env
            .iter()
            .chain(&spec.optional_env)
            .cloned()
            .collect();
        if let Some(ps) = spec.rate_hints.per_second {
            if !(ps.is_finite() && ps > 0.0) {
                bad("rate_hints.per_second", "give a positive number".to_owned());
            }
        }
        if spec.rate_hints.daily_cap == Some(0) {
            bad(
                "rate_hints.daily_cap",
                "give at least 1, or leave it out".to_owned(),
            );
        }
        if let Some(cost) = &spec.cost {
            if let Err(e) = cost.check() {
                bad("cost.unit", e);
            }
            for capability in cost.by_capability.keys() {
                if !spec.capabilities.contains(capability) {
                    bad(
                        &format!("cost.by_capability.{capability}"),
                        "name one of the manifest's capabilities".to_owned(),
                    );
                }
            }
        }

        // The request.
        let method = spec.request.method.to_ascii_uppercase();
        if method != "GET" && method != "POST" {
            bad(
                "request.method",
                format!("{:?}: expected GET or POST", spec.request.method),
            );
        }
        if spec.request.body.is_some() && method != "POST" {
            bad("request.body", "a body needs method = \"POST\"".to_owned());
        }
        check_url(&spec.request.url, &mut bad);
        let secrets_ok = |field: &str, text: &str, bad: &mut dyn FnMut(&str, String)| {
            check_template(field, text, &known_env, true, bad);
        };
        for (name, value) in &spec.request.query {
            if name.trim().is_empty() {
                bad("request.query", "a parameter has an empty name".to_owned());
            }
            secrets_ok(&format!("request.query.{name}"), value, &mut bad);
        }
        for (name, value) in &spec.request.headers {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                bad(
                    &format!("request.headers.{name}"),
                    "not a valid header name".to_owned(),
                );
            }
            if value.contains(['\r', '\n']) {
                bad(
                    &format!("request.headers.{name}"),
                    "a header value cannot span lines".to_owned(),
                );
            }
            secrets_ok(&format!("request.headers.{name}"), value, &mut bad);
        }
        if let Some(body) = &spec.request.body {
            let mut strings = Vec::new();
            collect_strings(body, &mut strings);
            for s in strings {
                check_template("request.body", s, &known_env, false, &mut bad);
            }
        }

        // The response.
        let path = |field: &str, text: &str, bad: &mut dyn FnMut(&str, String)| {
            if text.chars().count() > MAX_PATH_CHARS {
                bad(
                    field,
                    format!("a JSONPath of at most {MAX_PATH_CHARS} characters"),
                );
                return None;
            }
            if text.matches("..").count() > 1 {
                bad(
                    field,
                    format!(
                        "{text:?} has more than one descendant step (..): each one more \
                         multiplies the work over the whole answer"
                    ),
                );
                return None;
            }
            match JsonPath::parse(text) {
                Ok(p) => Some(p),
                Err(e) => {
                    bad(
                        field,
                        format!("{text:?} is not a JSONPath (RFC 9535), e.g. \"$.items[*]\": {e}"),
                    );
                    None
                }
            }
        };
        let items = path("response.items", &spec.response.items, &mut bad);
        let url = Field::compile("response.url", &spec.response.url, &path, &mut bad);
        let title = Field::compile("response.title", &spec.response.title, &path, &mut bad);
        let snippet = spec
            .response
            .snippet
            .as_ref()
            .map(|s| Field::compile("response.snippet", s, &path, &mut bad));

        // Paging.
        let mut cursor = None;
        if let Some(p) = &spec.pagination {
            if p.param.trim().is_empty() {
                bad(
                    "pagination.param",
                    "name the query parameter that pages".to_owned(),
                );
            }
            if p.max_pages == 0 || p.max_pages > MAX_PAGES {
                bad("pagination.max_pages", format!("give 1 to {MAX_PAGES}"));
            }
            match (p.kind, &p.cursor_path) {
                (PageKind::Cursor, None) => {
                    bad(
                        "pagination.cursor_path",
                        "kind = \"cursor\" needs the JSONPath of the next cursor".to_owned(),
                    );
                }
                (PageKind::Cursor, Some(c)) => cursor = path("pagination.cursor_path", c, &mut bad),
                (_, Some(_)) => bad(
                    "pagination.cursor_path",
                    "only kind = \"cursor\" reads a cursor".to_owned(),
                ),
                (_, None) => {}
            }
        }

        // Errors.
        for (i, rule) in spec.errors.iter().enumerate() {
            if rule.status.is_none() && rule.body_contains.is_none() {
                bad(
                    &format!("errors[{i}]"),
                    "give status, body_contains or both".to_owned(),
                );
            }
            if let Some(s) = rule.status {
                if !(400..=599).contains(&s) {
                    bad(
                        &format!("errors[{i}].status"),
                        format!("{s}: expected an error status, 400 to 599"),
                    );
                }
            }
            if rule
                .body_contains
                .as_deref()
                .is_some_and(|t| t.trim().is_empty())
            {
                bad(
                    &format!("errors[{i}].body_contains"),
                    "give some text, or leave it out".to_owned(),
                );
            }
        }

        if !problems.is_empty() {
            return Err(ManifestError(problems));
        }
        match (items, url, title) {
            (Some(items), Some(url), Some(title)) => Ok(Manifest {
                digest: digest(&spec),
                capabilities,
                items,
                url,
                title,
                snippet: snippet.flatten(),
                cursor,
                spec,
            }),
            _ => Err(ManifestError::one("response", "unreadable JSONPaths")),
        }
    }

    /// What the registry is told about this connector.
    pub fn registration(&self) -> Registration {
        Registration {
            cost: self.spec.cost.clone(),
            suspends_on_errors: true,
            id: self.spec.id.clone(),
            display_name: self.spec.display_name.clone(),
            short_label: self.spec.short_label.clone(),
            capabilities: self.capabilities.clone(),
            cost_tier: self.spec.cost_tier,
            requires_env: self.spec.requires_env.clone(),
            rate_hints: self.spec.rate_hints,
        }
    }
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

fn check_url(url: &str, bad: &mut dyn FnMut(&str, String)) {
    let field = "request.url";
    let Some((scheme, rest)) = url.split_once("://") else {
        bad(
            field,
            format!("{url:?}: expected an absolute http(s) address"),
        );
        return;
    };
    if scheme != "https" && scheme != "http" {
        bad(
            field,
            format!("scheme {scheme:?}: expected https (or http)"),
        );
        return;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains("{{") {
        bad(
            field,
            "the host must be written out: placeholders may only appear in the path".to_owned(),
        );
        return;
    }
    if url.contains("{{secret.") {
        bad(
            field,
            "a secret may only go in a header or a query parameter, where it is kept out of logs"
                .to_owned(),
        );
    }
    if url::Url::parse(&url.replace("{{", "x").replace("}}", "x")).is_err() {
        bad(field, format!("{url:?} is not a valid address"));
    }
}

/// Checks the `{{...}}` placeholders of one template (`known_env`: the
/// variables a secret placeholder may name).
fn check_template(
    field: &str,
    text: &str,
    known_env: &[String],
    secrets_allowed: bool,
    bad: &mut dyn FnMut(&str, String),
) {
    let pieces = match template::pieces(text) {
        Ok(pieces) => pieces,
        Err(e) => return bad(field, e.to_string()),
    };
    for piece in pieces {
        match piece {
            Piece::Text(_)
            | Piece::Placeholder(Placeholder::Query | Placeholder::MaxResults | Placeholder::Record(_)) => {}
            Piece::Placeholder(Placeholder::Secret(var)) => {
                if !secrets_allowed {
                    bad(field, "a secret may only go in a header or a query parameter".to_owned());
                } else if !known_env.iter().any(|v| v == var) {
                    bad(
                        field,
                        format!("{{{{secret.{var}}}}} is listed in neither requires_env nor optional_env"),
                    );
                }
            }
            Piece::Placeholder(Placeholder::Item(_)) => bad(
                field,
                "{{$...}} reads a result: it belongs in [response]".to_owned(),
            ),
            Piece::Placeholder(Placeholder::Unknown(name)) => bad(
                field,
                format!("unknown placeholder {{{{{name}}}}}: expected query, max_results, record.<field> or secret.<NAME>"),
            ),
        }
    }
}

fn collect_strings<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(a) => a.iter().for_each(|v| collect_strings(v, out)),
        serde_json::Value::Object(o) => o.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// Why a template could not be filled.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RenderError {
    #[error("{0} is not set")]
    MissingSecret(String),
    #[error("{0}")]
    Template(String),
}

/// Fills a template's placeholders.
pub(crate) fn render(
    text: &str,
    query: &str,
    max_results: usize,
    record: &BTreeMap<String, String>,
    record_name: &str,
    secret: &dyn Fn(&str) -> Option<String>,
) -> Result<String, RenderError> {
    let pieces = template::pieces(text).map_err(|e| RenderError::Template(e.to_string()))?;
    let mut out = String::with_capacity(text.len());
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Placeholder(Placeholder::Query) => out.push_str(query),
            Piece::Placeholder(Placeholder::MaxResults) => out.push_str(&max_results.to_string()),
            Piece::Placeholder(Placeholder::Record("name")) => out.push_str(record_name),
            Piece::Placeholder(Placeholder::Record(field)) => {
                out.push_str(record.get(field).map_or("", String::as_str));
            }
            Piece::Placeholder(Placeholder::Secret(var)) => out
                .push_str(&secret(var).ok_or_else(|| RenderError::MissingSecret(var.to_owned()))?),
            Piece::Placeholder(Placeholder::Item(name) | Placeholder::Unknown(name)) => {
                return Err(RenderError::Template(format!(
                    "unknown placeholder {{{{{name}}}}}"
                )))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
