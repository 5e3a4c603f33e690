//! One result field of a manifest (`url`, `title`, `snippet`): a JSONPath
//! into the item (`"$.url"`), a template whose `{{$.path}}` placeholders are
//! JSONPaths into it (`"https://bsky.app/profile/{{$.handle}}"`), or a list
//! of these tried in order until one gives a value. A template gives nothing
//! when one of its placeholders finds nothing or only blanks; in a `url`
//! template a placeholder after the address's start is percent-encoded as a
//! path segment.

use model::template::{self, Piece, Placeholder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json_path::JsonPath;

/// A result field as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FieldSpec {
    One(String),
    /// Tried in order; the first that gives a value wins.
    FirstOf(Vec<String>),
}

impl FieldSpec {
    pub fn candidates(&self) -> &[String] {
        match self {
            FieldSpec::One(one) => std::slice::from_ref(one),
            FieldSpec::FirstOf(all) => all,
        }
    }
}

/// The most candidates one field may list.
const MAX_CANDIDATES: usize = 8;

/// A checked field.
#[derive(Clone, Debug)]
pub(crate) struct Field(Vec<Candidate>);

#[derive(Clone, Debug)]
enum Candidate {
    Path(JsonPath),
    Template(Vec<Part>),
}

#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Path(JsonPath),
}

/// Checks a JSONPath, reporting what is wrong under a field's name.
pub(crate) type PathCheck<'a> =
    dyn Fn(&str, &str, &mut dyn FnMut(&str, String)) -> Option<JsonPath> + 'a;

impl Field {
    /// Checks `spec` as field `name`; `None` when anything in it is wrong
    /// (each mistake reported through `bad`).
    pub(crate) fn compile(
        name: &str,
        spec: &FieldSpec,
        path: &PathCheck<'_>,
        bad: &mut dyn FnMut(&str, String),
    ) -> Option<Self> {
        let texts = spec.candidates();
        if texts.is_empty() || texts.len() > MAX_CANDIDATES {
            bad(name, format!("list 1 to {MAX_CANDIDATES} ways to read it"));
            return None;
        }
        let mut candidates = Vec::with_capacity(texts.len());
        let mut ok = true;
        for text in texts {
            let candidate = if text.trim_start().starts_with('$') {
                path(name, text.trim(), bad).map(Candidate::Path)
            } else {
                Self::template(name, text, path, bad).map(Candidate::Template)
            };
            match candidate {
                Some(c) => candidates.push(c),
                None => ok = false,
            }
        }
        ok.then_some(Field(candidates))
    }

    fn template(
        name: &str,
        text: &str,
        path: &PathCheck<'_>,
        bad: &mut dyn FnMut(&str, String),
    ) -> Option<Vec<Part>> {
        let pieces = match template::pieces(text) {
            Ok(pieces) => pieces,
            Err(e) => {
                bad(name, e.to_string());
                return None;
            }
        };
        let mut parts = Vec::with_capacity(pieces.len());
        let mut reads = false;
        for piece in pieces {
            match piece {
                Piece::Text(t) => parts.push(Part::Text(t.to_owned())),
                Piece::Placeholder(Placeholder::Item(p)) => {
                    parts.push(Part::Path(path(name, p, bad)?));
                    reads = true;
                }
                Piece::Placeholder(other) => {
                    bad(
                        name,
                        format!(
                            "{} does not read the result: write a JSONPath into it, e.g. {{{{$.handle}}}}",
                            other.written()
                        ),
                    );
                    return None;
                }
            }
        }
        if !reads {
            bad(
                name,
                format!("{text:?} reads nothing from the result: write a JSONPath (\"$.title\") or a template with {{{{$.path}}}}"),
            );
            return None;
        }
        Some(parts)
    }

    /// The field's value for one item: the first way that gives one. In a
    /// `url`, only an http(s) address counts.
    pub(crate) fn read(&self, item: &Value, url: bool) -> Option<String> {
        self.0.iter().find_map(|candidate| {
            let value = match candidate {
                Candidate::Path(p) => first_string(p, item)?,
                Candidate::Template(parts) => {
                    let mut out = String::new();
                    for (i, part) in parts.iter().enumerate() {
                        match part {
                            Part::Text(t) => out.push_str(t),
                            Part::Path(p) => {
                                let v = first_string(p, item).filter(|v| !v.trim().is_empty())?;
                                if url && i > 0 {
                                    out.push_str(&path_segment(&v));
                                } else {
                                    out.push_str(&v);
                                }
                            }
                        }
                    }
                    out
                }
            };
            let usable = if url {
                value.starts_with("https://") || value.starts_with("http://")
            } else {
                !value.trim().is_empty()
            };
            usable.then_some(value)
        })
    }
}

/// The first string (or number) a JSONPath finds in `value`.
pub(crate) fn first_string(path: &JsonPath, value: &Value) -> Option<String> {
    match path.query(value).first()? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `text` percent-encoded as one path segment (letters, digits and
/// `_-.~()',:@` stay).
pub(crate) fn path_segment(text: &str) -> String {
    percent_encoded(text, b"_-.~()',:@")
}

/// `text` percent-encoded as a query component (only letters, digits and
/// `-._~` stay).
pub(crate) fn component(text: &str) -> String {
    percent_encoded(text, b"-._~")
}

fn percent_encoded(text: &str, keep: &[u8]) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || keep.contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
