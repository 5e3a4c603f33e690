//! Packs and bundles as data: what each chip fires and which chips a record
//! set shows. The engine validates and loads them (`engine::packs`).

use serde::{Deserialize, Serialize};

use crate::Capability;

/// One chip's worth of configuration: *what* to find, never *how*.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, try_from = "PackAsWritten")]
pub struct PackConfig {
    pub pack_id: String,
    pub display_name: String,
    /// One to three characters, unique among packs: the chip's label.
    pub short_label: String,
    #[serde(default)]
    pub description: String,
    pub intent: Capability,
    /// The query, with `{name}` and `{<field>}` taken from the record.
    #[serde(default = "default_template")]
    pub query_template: String,
    /// Connector ids in the order they are tried.
    #[serde(default)]
    pub preferred_connectors: Vec<String>,
}

fn default_template() -> String {
    "{name}".to_owned()
}

/// A pack as people write it: [`PackConfig`]'s fields, and the legacy
/// `connector`, the name packs gave their one connector before chains (an
/// alias of the chain's first). Read into a `PackConfig`, so a pack saved
/// again is written in the current form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PackAsWritten {
    pack_id: String,
    display_name: String,
    short_label: String,
    #[serde(default)]
    description: String,
    intent: Capability,
    #[serde(default = "default_template")]
    query_template: String,
    #[serde(default)]
    preferred_connectors: Vec<String>,
    #[serde(default)]
    connector: Option<String>,
}

impl TryFrom<PackAsWritten> for PackConfig {
    type Error = String;

    fn try_from(w: PackAsWritten) -> Result<Self, String> {
        let mut chain = w.preferred_connectors;
        match (w.connector, chain.first()) {
            (None, _) => {}
            (Some(legacy), None) => chain.push(legacy),
            (Some(legacy), Some(first)) if *first == legacy => {}
            (Some(legacy), Some(first)) => {
                return Err(format!(
                    "pack {:?}: `connector` ({legacy:?}) is the old name of the first of \
                     `preferred_connectors` ({first:?}); give one of them, or make them agree",
                    w.pack_id
                ))
            }
        }
        Ok(Self {
            pack_id: w.pack_id,
            display_name: w.display_name,
            short_label: w.short_label,
            description: w.description,
            intent: w.intent,
            query_template: w.query_template,
            preferred_connectors: chain,
        })
    }
}

/// Which rule chose the connectors a fire tries, first to last: the levels
/// of spec/000's resolution, most specific first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChainRule {
    /// A connector picked for this one fire (the menu, `connector`).
    Fire,
    /// The record's "always start with".
    Record,
    /// The person's own order for the pack (Settings).
    Person,
    /// The bundle's chain for the pack.
    Bundle,
    /// The pack's `preferred_connectors`.
    Pack,
    /// Every connector serving the intent, cheapest first.
    CostTier,
}

impl ChainRule {
    /// The rule in a few words, for a tooltip: "Fire f through SerpApi
    /// (your order)".
    pub const fn describe(self) -> &'static str {
        match self {
            ChainRule::Fire => "picked for this fire",
            ChainRule::Record => "this record starts with it",
            ChainRule::Person => "your order",
            ChainRule::Bundle => "the bundle's order",
            ChainRule::Pack => "the pack's order",
            ChainRule::CostTier => "cheapest first",
        }
    }
}

/// A person's own order of a pack's connectors, in one workspace: it comes
/// before the bundle's and the pack's, for their fires and chips only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PersonalChain {
    pub pack_id: String,
    /// Connector ids in the order tried (one: always that one).
    pub connectors: Vec<String>,
}

/// One pack in a bundle, with an optional chain that replaces the pack's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BundleMember {
    pub pack: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_chain_override: Option<Vec<String>>,
}

/// An ordered roster of packs: the chips of every card of a record set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BundleConfig {
    pub bundle_id: String,
    pub display_name: String,
    #[serde(default)]
    pub description: String,
    pub members: Vec<BundleMember>,
}

/// A workspace's packs and bundles (the shipped ones with its own laid over
/// them), and which of them it made or changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceCatalog {
    pub packs: Vec<PackConfig>,
    pub bundles: Vec<BundleConfig>,
    /// Ids of the packs and bundles the workspace made or changed.
    pub own_packs: Vec<String>,
    pub own_bundles: Vec<String>,
    /// Ids of the packs and bundles that ship with Switchyard (an own one
    /// with such an id is the workspace's version of it).
    pub shipped_packs: Vec<String>,
    pub shipped_bundles: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(extra: &str) -> Result<PackConfig, serde_json::Error> {
        serde_json::from_str(&format!(
            r#"{{"pack_id": "facebook", "display_name": "Facebook", "short_label": "f",
                "intent": "search.social.facebook"{extra}}}"#
        ))
    }

    #[test]
    fn the_legacy_connector_is_the_first_of_the_chain_and_is_written_back_as_a_chain() {
        let pack = read(r#", "connector": "searxng""#).unwrap();
        assert_eq!(pack.preferred_connectors, ["searxng"]);
        let written = serde_json::to_value(&pack).unwrap();
        assert_eq!(
            written["preferred_connectors"],
            serde_json::json!(["searxng"])
        );
        assert!(written.get("connector").is_none(), "{written}");
    }

    #[test]
    fn the_legacy_connector_agreeing_with_the_chain_is_accepted_and_disagreeing_is_refused() {
        let agrees =
            read(r#", "connector": "searxng", "preferred_connectors": ["searxng", "tavily"]"#);
        assert_eq!(agrees.unwrap().preferred_connectors, ["searxng", "tavily"]);
        let refused = read(r#", "connector": "serpapi", "preferred_connectors": ["searxng"]"#)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("\"facebook\""), "{refused}");
        assert!(
            refused.contains("\"serpapi\"") && refused.contains("\"searxng\""),
            "{refused}"
        );
    }

    #[test]
    fn an_unknown_field_is_still_refused_by_name() {
        let refused = read(r#", "conector": "searxng""#).unwrap_err().to_string();
        assert!(refused.contains("conector"), "{refused}");
    }
}
