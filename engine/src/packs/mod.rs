//! Packs and bundles: what each chip fires (intent, query template, preferred
//! connector chain) and which chips a record set shows. They are data, read
//! from TOML; `packs.toml` beside this crate is the shipped catalogue.

//!
//! Beside them: `chain` resolves which connectors a fire tries and why,
//! `chip` derives what a chip shows, and `workspace` is the catalogue as one
//! workspace has it (the shipped one with its admins' own packs and bundles).

pub mod chain;
pub mod chip;
pub mod workspace;

use std::collections::{BTreeMap, HashMap};

pub use model::{BundleConfig, BundleMember, PackConfig};
use serde::Deserialize;

/// The catalogue shipped with Switchyard.
pub const DEFAULT_CATALOG: &str = include_str!("../../packs.toml");

/// Every pack and bundle, validated together.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    packs: Vec<PackConfig>,
    bundles: Vec<BundleConfig>,
    /// Connectors appended to every chain (the demo connector in demo mode),
    /// appended to a workspace's own packs too.
    appended: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default, rename = "pack")]
    packs: Vec<PackConfig>,
    #[serde(default, rename = "bundle")]
    bundles: Vec<BundleConfig>,
}

/// What is wrong with a catalogue; `at` names the place.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {what}")]
pub struct CatalogError {
    pub at: String,
    pub what: String,
}

impl Catalog {
    /// Reads and validates a TOML catalogue (`[[pack]]` and `[[bundle]]` tables).
    pub fn from_toml(text: &str) -> Result<Self, CatalogError> {
        let file: CatalogFile = toml::from_str(text).map_err(|e| CatalogError {
            at: e
                .span()
                .map(|s| format!("line {}", line_of(text, s.start)))
                .unwrap_or_else(|| "catalogue".to_owned()),
            what: e.message().to_owned(),
        })?;
        Self::new(file.packs, file.bundles)
    }

    /// The shipped catalogue.
    pub fn builtin() -> Self {
        // Proven valid by the test `the_shipped_catalogue_is_valid`.
        Self::from_toml(DEFAULT_CATALOG).unwrap_or_default()
    }

    /// Validates packs and bundles together.
    pub fn new(packs: Vec<PackConfig>, bundles: Vec<BundleConfig>) -> Result<Self, CatalogError> {
        let mut by_id: HashMap<&str, usize> = HashMap::new();
        let mut by_label: HashMap<String, &str> = HashMap::new();
        for (i, pack) in packs.iter().enumerate() {
            let at = format!("pack {:?}", pack.pack_id);
            check_id(&pack.pack_id, &format!("pack #{}", i + 1))?;
            if by_id.insert(&pack.pack_id, i).is_some() {
                return Err(err(&at, "pack_id is used twice"));
            }
            let label = pack.short_label.trim();
            if label.is_empty()
                || label.chars().count() > 3
                || label.chars().any(char::is_whitespace)
            {
                return Err(err(
                    &at,
                    "short_label must be 1 to 3 characters without spaces",
                ));
            }
            if let Some(other) = by_label.insert(label.to_lowercase(), &pack.pack_id) {
                return Err(err(
                    &at,
                    &format!("short_label {label:?} is already the label of pack {other:?}; pick another"),
                ));
            }
            if pack.display_name.trim().is_empty() {
                return Err(err(&at, "display_name is empty"));
            }
            parse_template(&pack.query_template)
                .map_err(|what| err(&at, &format!("query_template: {what}")))?;
        }
        let mut bundle_ids = HashMap::new();
        for (i, bundle) in bundles.iter().enumerate() {
            check_id(&bundle.bundle_id, &format!("bundle #{}", i + 1))?;
            let at = format!("bundle {:?}", bundle.bundle_id);
            if bundle_ids.insert(&bundle.bundle_id, ()).is_some() {
                return Err(err(&at, "bundle_id is used twice"));
            }
            if bundle.members.is_empty() {
                return Err(err(&at, "it has no members"));
            }
            let mut seen = HashMap::new();
            for member in &bundle.members {
                if !by_id.contains_key(member.pack.as_str()) {
                    return Err(err(&at, &format!("member {:?} is not a pack", member.pack)));
                }
                if seen.insert(&member.pack, ()).is_some() {
                    return Err(err(&at, &format!("member {:?} appears twice", member.pack)));
                }
            }
        }
        Ok(Self {
            packs,
            bundles,
            appended: Vec::new(),
        })
    }

    /// This catalogue with a workspace's own packs and bundles laid over it:
    /// one with a shipped id replaces it, a new one is added; the result is
    /// validated whole (labels stay unique, bundles name existing packs).
    pub fn with_overlay(
        &self,
        packs: Vec<PackConfig>,
        bundles: Vec<BundleConfig>,
    ) -> Result<Self, CatalogError> {
        if packs.is_empty() && bundles.is_empty() {
            return Ok(self.clone());
        }
        let mut all_packs = self.packs.clone();
        for mut pack in packs {
            if !pack.preferred_connectors.is_empty() {
                for id in &self.appended {
                    if !pack.preferred_connectors.contains(id) {
                        pack.preferred_connectors.push(id.clone());
                    }
                }
            }
            match all_packs.iter_mut().find(|p| p.pack_id == pack.pack_id) {
                Some(slot) => *slot = pack,
                None => all_packs.push(pack),
            }
        }
        let mut all_bundles = self.bundles.clone();
        for bundle in bundles {
            match all_bundles
                .iter_mut()
                .find(|b| b.bundle_id == bundle.bundle_id)
            {
                Some(slot) => *slot = bundle,
                None => all_bundles.push(bundle),
            }
        }
        let mut merged = Self::new(all_packs, all_bundles)?;
        merged.appended = self.appended.clone();
        Ok(merged)
    }

    /// Appends a connector to every pack's chain (the demo connector in demo
    /// mode: tried after every real connector).
    pub fn append_to_every_chain(&mut self, connector_id: &str) {
        if !self.appended.iter().any(|c| c == connector_id) {
            self.appended.push(connector_id.to_owned());
        }
        for pack in &mut self.packs {
            if !pack.preferred_connectors.iter().any(|c| c == connector_id) {
                pack.preferred_connectors.push(connector_id.to_owned());
            }
        }
    }

    pub fn packs(&self) -> &[PackConfig] {
        &self.packs
    }

    pub fn bundles(&self) -> &[BundleConfig] {
        &self.bundles
    }

    pub fn pack(&self, id: &str) -> Option<&PackConfig> {
        self.packs.iter().find(|p| p.pack_id == id)
    }

    pub fn bundle(&self, id: &str) -> Option<&BundleConfig> {
        self.bundles.iter().find(|b| b.bundle_id == id)
    }

    /// The packs of a bundle, in roster order, with each member's override.
    pub fn bundle_packs(&self, bundle_id: &str) -> Vec<(&PackConfig, &BundleMember)> {
        self.bundle(bundle_id)
            .map(|b| {
                b.members
                    .iter()
                    .filter_map(|m| self.pack(&m.pack).map(|p| (p, m)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn err(at: &str, what: &str) -> CatalogError {
    CatalogError {
        at: at.to_owned(),
        what: what.to_owned(),
    }
}

fn check_id(id: &str, at: &str) -> Result<(), CatalogError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(err(
            at,
            &format!("id {id:?} must be 1 to 64 of a-z, 0-9, '-' and '_'"),
        ))
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

/// A piece of a query template.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Field(&'a str),
}

/// Splits a template into text and `{field}` pieces; `{{` and `}}` are literal braces.
fn parse_template(template: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("{{") {
            pieces.push(Piece::Text("{"));
            rest = after;
        } else if let Some(after) = rest.strip_prefix("}}") {
            pieces.push(Piece::Text("}"));
            rest = after;
        } else if let Some(after) = rest.strip_prefix('{') {
            let end = after
                .find('}')
                .ok_or_else(|| format!("a '{{' is never closed in {template:?}"))?;
            let field = after[..end].trim();
            if field.is_empty() || field.contains('{') {
                return Err(format!("empty or nested placeholder in {template:?}"));
            }
            pieces.push(Piece::Field(field));
            rest = &after[end + 1..];
        } else if rest.starts_with('}') {
            return Err(format!(
                "a '}}' has no opening '{{' in {template:?} (write '}}}}' for a brace)"
            ));
        } else {
            let end = rest.find(['{', '}']).unwrap_or(rest.len());
            pieces.push(Piece::Text(&rest[..end]));
            rest = &rest[end..];
        }
    }
    Ok(pieces)
}

/// Fills a pack's query template from a record. `{name}` is the record's name;
/// other placeholders are its fields (matched case-insensitively), empty when
/// the record has no such field. Runs of spaces left behind are collapsed.
pub fn render_query(template: &str, name: &str, fields: &BTreeMap<String, String>) -> String {
    let Ok(pieces) = parse_template(template) else {
        // Templates are validated when the catalogue loads.
        return name.to_owned();
    };
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Field(f) if f.eq_ignore_ascii_case("name") => out.push_str(name),
            Piece::Field(f) => {
                if let Some(v) = fields
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(f))
                    .map(|(_, v)| v)
                {
                    out.push_str(v);
                }
            }
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_catalogue_is_valid() {
        let catalog = Catalog::from_toml(DEFAULT_CATALOG).unwrap();
        for label in [
            "f", "in", "x", "bs", "ig", "yt", "wp", "gn", "web", "sch", "kg",
        ] {
            assert!(
                catalog.packs().iter().any(|p| p.short_label == label),
                "no pack labelled {label}"
            );
        }
        assert!(catalog.bundle("social-profiles").is_some());
        assert!(catalog.bundle("entity-pulse").is_some());
    }

    fn pack(id: &str, label: &str) -> String {
        format!(
            "[[pack]]\npack_id = \"{id}\"\ndisplay_name = \"{id}\"\nshort_label = \"{label}\"\nintent = \"search.web\"\n"
        )
    }

    #[test]
    fn a_workspace_overlay_replaces_adds_and_is_checked_whole() {
        let mut base = Catalog::from_toml(&(pack("web", "w") + &pack("news", "n"))).unwrap();
        base.append_to_every_chain("demo");
        let own = |id: &str, label: &str, chain: &[&str]| PackConfig {
            pack_id: id.into(),
            display_name: id.into(),
            short_label: label.into(),
            description: String::new(),
            intent: "community.forum".parse().unwrap(),
            query_template: "{name}".into(),
            preferred_connectors: chain.iter().map(|c| c.to_string()).collect(),
        };
        let bundle = BundleConfig {
            bundle_id: "mine".into(),
            display_name: "Mine".into(),
            description: String::new(),
            members: ["web", "forum"]
                .map(|p| BundleMember {
                    pack: p.into(),
                    connector_chain_override: None,
                })
                .to_vec(),
        };
        let merged = base
            .with_overlay(
                vec![own("forum", "fo", &["hn"]), own("news", "gn", &[])],
                vec![bundle.clone()],
            )
            .unwrap();
        assert_eq!(merged.packs().len(), 3);
        assert_eq!(merged.pack("news").unwrap().short_label, "gn");
        // The demo connector still ends a chain that names connectors.
        assert_eq!(
            merged.pack("forum").unwrap().preferred_connectors,
            ["hn", "demo"]
        );
        assert_eq!(merged.bundle_packs("mine").len(), 2);
        // The base is untouched.
        assert_eq!(base.pack("news").unwrap().short_label, "n");

        let clash = base
            .with_overlay(vec![own("forum", "W", &[])], vec![])
            .unwrap_err();
        assert!(clash.what.contains("\"web\""), "{clash}");
        let orphan = base.with_overlay(vec![], vec![bundle]).unwrap_err();
        assert!(orphan.what.contains("\"forum\" is not a pack"), "{orphan}");
    }

    #[test]
    fn a_short_label_collision_names_both_packs() {
        let text = pack("facebook", "f") + &pack("flickr", "F");
        let e = Catalog::from_toml(&text).unwrap_err();
        assert_eq!(e.at, "pack \"flickr\"");
        assert!(e.what.contains("\"facebook\""), "{e}");
    }

    #[test]
    fn mistakes_are_reported_with_their_place() {
        let cases = [
            (pack("a", "a") + "colour = \"red\"\n", "unknown field"),
            (pack("a", "abcd"), "short_label"),
            (pack("A!", "a"), "must be 1 to 64"),
            (pack("a", "a") + &pack("a", "b"), "used twice"),
            (pack("a", "a").replace("search.web", "Web"), "not a capability name"),
            (pack("a", "a") + "query_template = \"{name\"\n", "never closed"),
            (
                pack("a", "a") + "[[bundle]]\nbundle_id = \"b\"\ndisplay_name = \"B\"\nmembers = [{ pack = \"zz\" }]\n",
                "\"zz\" is not a pack",
            ),
            (
                pack("a", "a") + "[[bundle]]\nbundle_id = \"b\"\ndisplay_name = \"B\"\nmembers = []\n",
                "no members",
            ),
        ];
        for (text, expected) in cases {
            let e = Catalog::from_toml(&text).unwrap_err();
            assert!(e.to_string().contains(expected), "{text}\n=> {e}");
        }
    }

    #[test]
    fn templates_fill_from_the_record() {
        let fields = BTreeMap::from([
            ("City".to_owned(), "Lyon".to_owned()),
            ("website".to_owned(), "https://a.example".to_owned()),
        ]);
        assert_eq!(render_query("{name}", "Acme", &fields), "Acme");
        assert_eq!(render_query("{name} {city}", "Acme", &fields), "Acme Lyon");
        assert_eq!(
            render_query("{name} {country} news", "Acme", &fields),
            "Acme news"
        );
        assert_eq!(render_query("{{{name}}}", "Acme", &fields), "{Acme}");
        assert_eq!(
            render_query("{website}", "Acme", &fields),
            "https://a.example"
        );
    }
}
