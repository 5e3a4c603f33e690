//! Packs and bundles as data: what each chip fires and which chips a record
//! set shows. The engine validates and loads them (`engine::packs`).

use serde::{Deserialize, Serialize};

use crate::Capability;

/// One chip's worth of configuration: *what* to find, never *how*.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
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
