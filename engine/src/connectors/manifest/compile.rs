//! Checking a manifest before it serves: how it is called (method,
//! address, templates, headers, body), the paths its answer is read with
//! (bounded JSONPath), its paging and its error rules. Every mistake is
//! named by its field; nothing is half-accepted.

use model::template::{self, Piece, Placeholder};
use model::Problem;
use serde_json_path::JsonPath;

use super::field::Field;
use super::{ErrorRule, HttpSpec, PageKind, PaginationSpec, MAX_PAGES, MAX_PATH_CHARS};

/// The paths and fields a manifest's answer is read with.
pub(super) struct Compiled {
    pub(super) items: JsonPath,
    pub(super) url: Field,
    pub(super) title: Field,
    pub(super) snippet: Option<Field>,
    pub(super) cursor: Option<JsonPath>,
}

/// Checks how a manifest is called and read, given the settings its profile
/// requires, adding every mistake to `problems`; the compiled paths when
/// they all read.
pub(super) fn compile(
    http: &HttpSpec,
    requires_env: &[String],
    problems: &mut Vec<Problem>,
) -> Option<Compiled> {
    let mut bad = |field: &str, message: String| {
        problems.push(Problem {
            field: field.to_owned(),
            message,
        });
    };
    check_request(http, requires_env, &mut bad);
    let path =
        |field: &str, text: &str, bad: &mut dyn FnMut(&str, String)| compile_path(field, text, bad);
    let items = path("response.items", &http.response.items, &mut bad);
    let url = Field::compile("response.url", &http.response.url, &path, &mut bad);
    let title = Field::compile("response.title", &http.response.title, &path, &mut bad);
    let snippet = http
        .response
        .snippet
        .as_ref()
        .map(|s| Field::compile("response.snippet", s, &path, &mut bad));
    let cursor = http
        .pagination
        .as_ref()
        .and_then(|p| compile_paging(p, &mut bad));
    check_error_rules(&http.errors, &mut bad);
    Some(Compiled {
        items: items?,
        url: url?,
        title: title?,
        snippet: snippet.flatten(),
        cursor,
    })
}

/// Checks the request: the settings it may read, its method, address,
/// query, headers and body templates.
fn check_request(http: &HttpSpec, requires_env: &[String], bad: &mut dyn FnMut(&str, String)) {
    for (i, var) in http.optional_env.iter().enumerate() {
        if let Err(e) = model::check_secret_name(var) {
            bad(&format!("optional_env[{i}]"), e);
        } else if requires_env.contains(var) {
            bad(
                &format!("optional_env[{i}]"),
                format!("{var} is already in requires_env"),
            );
        }
    }
    let known_env: Vec<String> = requires_env
        .iter()
        .chain(&http.optional_env)
        .cloned()
        .collect();
    let method = http.request.method.to_ascii_uppercase();
    if method != "GET" && method != "POST" {
        bad(
            "request.method",
            format!("{:?}: expected GET or POST", http.request.method),
        );
    }
    if http.request.body.is_some() && method != "POST" {
        bad("request.body", "a body needs method = \"POST\"".to_owned());
    }
    check_url(&http.request.url, bad);
    for (name, value) in &http.request.query {
        if name.trim().is_empty() {
            bad("request.query", "a parameter has an empty name".to_owned());
        }
        check_template(
            &format!("request.query.{name}"),
            value,
            &known_env,
            true,
            bad,
        );
    }
    for (name, value) in &http.request.headers {
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
        check_template(
            &format!("request.headers.{name}"),
            value,
            &known_env,
            true,
            bad,
        );
    }
    if let Some(body) = &http.request.body {
        let mut strings = Vec::new();
        collect_strings(body, &mut strings);
        for s in strings {
            check_template("request.body", s, &known_env, false, bad);
        }
    }
}

/// A JSONPath of the answer, if it reads and is cheap enough to run on any
/// answer: bounded in length, one descendant step at most, no regular
/// expressions.
fn compile_path(field: &str, text: &str, bad: &mut dyn FnMut(&str, String)) -> Option<JsonPath> {
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
    if ["match(", "search("].iter().any(|f| text.contains(f)) {
        bad(
            field,
            format!(
                "{text:?} uses match() or search(): regular expressions are not offered, \
                 since each would be compiled again for every value it tests; filter with \
                 ==, < or length() instead"
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
}

/// Checks paging; the path of the next cursor when it pages by cursor.
fn compile_paging(p: &PaginationSpec, bad: &mut dyn FnMut(&str, String)) -> Option<JsonPath> {
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
            None
        }
        (PageKind::Cursor, Some(c)) => compile_path("pagination.cursor_path", c, bad),
        (_, Some(_)) => {
            bad(
                "pagination.cursor_path",
                "only kind = \"cursor\" reads a cursor".to_owned(),
            );
            None
        }
        (_, None) => None,
    }
}

/// Checks the rules that read an answer as an error.
fn check_error_rules(rules: &[ErrorRule], bad: &mut dyn FnMut(&str, String)) {
    for (i, rule) in rules.iter().enumerate() {
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
