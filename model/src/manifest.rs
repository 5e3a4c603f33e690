//! Wire types of the manifest editor and of workspace secrets: what the
//! browser (or a script) sends to check, test-fire, save and list manifest
//! connectors, and what it gets back. Secret values only ever travel in.

use serde::{Deserialize, Serialize};

use crate::template::secret_names;
use crate::FireOutcome;

/// How a manifest is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ManifestFormat {
    #[default]
    Toml,
    Json,
}

impl ManifestFormat {
    pub const fn name(self) -> &'static str {
        match self {
            ManifestFormat::Toml => "toml",
            ManifestFormat::Json => "json",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "toml" => Some(ManifestFormat::Toml),
            "json" => Some(ManifestFormat::Json),
            _ => None,
        }
    }
}

/// One mistake in a manifest: where, and what is wrong and what is expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Problem {
    /// A field path (`request.headers.Authorization`) or `line N`.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// A manifest as sent to be checked, test-fired or saved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ManifestDraft {
    pub text: String,
    #[serde(default)]
    pub format: ManifestFormat,
}

/// A test fire of a draft: the query to send, and optionally a record of the
/// caller's workspace whose fields fill `{{record.…}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ManifestTest {
    pub text: String,
    #[serde(default)]
    pub format: ManifestFormat,
    pub query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_id: Option<i64>,
}

/// One result of a test fire, as it would land in the curated layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TestResult {
    pub url: String,
    pub title: String,
    pub snippet: String,
}

/// What a test fire did. A draft that does not check has `problems` and was
/// not fired; otherwise `outcome` is how the dispatcher would classify the
/// answer, with the provider's error (keys scrubbed) when it failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TestReport {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<FireOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub results: Vec<TestResult>,
    pub elapsed_ms: u64,
}

impl TestReport {
    /// Whether the provider answered (found something or nothing); `error`
    /// then says what a partial answer missed, if anything.
    pub fn answered(&self) -> bool {
        matches!(
            self.outcome,
            Some(FireOutcome::Found | FireOutcome::NotFound)
        )
    }
}

/// A manifest a workspace saved: its text as written and whether it serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SavedManifest {
    pub connector_id: String,
    pub format: ManifestFormat,
    pub text: String,
    pub updated_by: String,
    /// Unix milliseconds.
    pub updated_at: i64,
    /// Why it is not serving (it stopped checking after an upgrade, or its
    /// id was taken meanwhile); `None` when it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A workspace secret as anyone may see it: its name, never its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct SecretInfo {
    pub name: String,
    pub set_by: String,
    /// Unix milliseconds.
    pub set_at: i64,
}

/// A secret's new value, sent once and never returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SecretValue {
    pub value: String,
}

/// Checks a secret's name: the variable a manifest's `{{secret.NAME}}` or a
/// connector's `requires_env` names.
pub fn check_secret_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a secret name: use 1 to 64 of A-Z, 0-9 and _, starting with a letter"
        ))
    }
}

/// The editor's form: the common shape of a search API (one GET, the query
/// in one parameter, maybe one header with a key), written out as a TOML
/// manifest for the raw editor, where anything else can be added.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ManifestForm {
    pub id: String,
    pub display_name: String,
    pub short_label: String,
    /// One capability, e.g. `search.web` or a new dotted one.
    pub capability: String,
    /// `free`, `free-tier` or `paid`.
    pub cost_tier: String,
    pub url: String,
    /// The query parameter that carries `{{query}}`.
    pub query_param: String,
    /// An optional header, e.g. `Authorization` = `Bearer {{secret.EXA_API_KEY}}`.
    pub header_name: String,
    pub header_value: String,
    /// JSONPaths: the result list, and url, title and snippet in one result.
    pub items: String,
    pub item_url: String,
    pub item_title: String,
    pub item_snippet: String,
}

/// A TOML basic string: quoted, with `"`, `\` and control characters escaped.
fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML key: bare when it can be, quoted otherwise.
fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        key.to_owned()
    } else {
        toml_string(key)
    }
}

impl ManifestForm {
    /// The manifest the form describes, as TOML. It is checked like any
    /// other manifest when tested or saved.
    pub fn to_toml(&self) -> String {
        let line = |key: &str, value: &str| format!("{key} = {}\n", toml_string(value.trim()));
        let mut out = String::new();
        out += &line("id", &self.id);
        out += &line("display_name", &self.display_name);
        out += &line("short_label", &self.short_label);
        let capability = self.capability.trim();
        if capability.is_empty() {
            out += "capabilities = []\n";
        } else {
            out += &format!("capabilities = [{}]\n", toml_string(capability));
        }
        let tier = match self.cost_tier.trim() {
            "" => "free",
            t => t,
        };
        out += &line("cost_tier", tier);
        let header = !self.header_name.trim().is_empty();
        let secrets = if header {
            secret_names(&self.header_value)
        } else {
            Vec::new()
        };
        if !secrets.is_empty() {
            let list: Vec<String> = secrets.iter().map(|s| toml_string(s)).collect();
            out += &format!("requires_env = [{}]\n", list.join(", "));
        }
        out += "\n[request]\n";
        out += &line("url", &self.url);
        if !self.query_param.trim().is_empty() {
            out += "\n[request.query]\n";
            out += &format!(
                "{} = {}\n",
                toml_key(self.query_param.trim()),
                toml_string("{{query}}")
            );
        }
        if header {
            out += "\n[request.headers]\n";
            out += &format!(
                "{} = {}\n",
                toml_key(self.header_name.trim()),
                toml_string(self.header_value.trim())
            );
        }
        out += "\n[response]\n";
        out += &line("items", &self.items);
        out += &line("url", &self.item_url);
        out += &line("title", &self.item_title);
        if !self.item_snippet.trim().is_empty() {
            out += &line("snippet", &self.item_snippet);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_writes_quoted_toml_and_lists_the_secrets_it_uses() {
        let form = ManifestForm {
            id: "exa".into(),
            display_name: "Exa \"neural\" search".into(),
            short_label: "Exa".into(),
            capability: "search.web".into(),
            cost_tier: "paid".into(),
            url: "https://api.exa.ai/search".into(),
            query_param: "q".into(),
            header_name: "x-api-key".into(),
            header_value: "{{secret.EXA_API_KEY}}".into(),
            items: "$.results[*]".into(),
            item_url: "$.url".into(),
            item_title: "$.title".into(),
            item_snippet: String::new(),
        };
        let text = form.to_toml();
        assert!(
            text.contains(r#"display_name = "Exa \"neural\" search""#),
            "{text}"
        );
        assert!(text.contains(r#"requires_env = ["EXA_API_KEY"]"#), "{text}");
        assert!(text.contains("[request.headers]\nx-api-key = "), "{text}");
        assert!(!text.contains("snippet"), "{text}");
        assert_eq!(toml_key("a b"), r#""a b""#);
        assert_eq!(toml_string("a\\b\nc"), r#""a\\b\nc""#);
    }

    #[test]
    fn secret_names_are_environment_variable_names() {
        assert!(check_secret_name("EXA_API_KEY").is_ok());
        assert!(check_secret_name("K2").is_ok());
        for bad in ["", "exa_key", "2KEY", "EXA-KEY", "EXA KEY", &"K".repeat(65)] {
            assert!(check_secret_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_test_request_reads_as_flat_json() {
        let t: ManifestTest =
            serde_json::from_str(r#"{"text":"id = 'x'","format":"toml","query":"ada"}"#).unwrap();
        assert_eq!(t.format, ManifestFormat::Toml);
        assert_eq!(t.query, "ada");
        assert!(
            serde_json::from_str::<ManifestTest>(r#"{"text":"","query":"","extra":1}"#).is_err()
        );
    }
}
