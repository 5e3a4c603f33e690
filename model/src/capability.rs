//! Capabilities (intents): what a person wants done, named by stable dotted names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! builtin_capabilities {
    ($($variant:ident => $name:literal, $label:literal;)*) => {
        /// A built-in intent. Adding one is one line in the list below.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum BuiltinCapability {
            $($variant,)*
        }

        impl BuiltinCapability {
            /// Every built-in capability, in declaration order.
            pub const ALL: &'static [BuiltinCapability] = &[$(BuiltinCapability::$variant,)*];

            /// The stable dotted name, e.g. `search.social.linkedin`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(BuiltinCapability::$variant => $name,)*
                }
            }

            /// A few words for people, e.g. "LinkedIn profile".
            pub const fn label(self) -> &'static str {
                match self {
                    $(BuiltinCapability::$variant => $label,)*
                }
            }

            fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(BuiltinCapability::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

builtin_capabilities! {
    SearchWeb => "search.web", "Web search";
    SearchNews => "search.news", "News";
    SearchScholar => "search.scholar", "Scholarly works";
    SocialLinkedin => "search.social.linkedin", "LinkedIn";
    SocialX => "search.social.x", "X";
    SocialBluesky => "search.social.bluesky", "Bluesky";
    SocialFacebook => "search.social.facebook", "Facebook";
    SocialInstagram => "search.social.instagram", "Instagram";
    SocialYoutube => "search.social.youtube", "YouTube";
    SocialTiktok => "search.social.tiktok", "TikTok";
    SocialThreads => "search.social.threads", "Threads";
    CrawlSite => "crawl.site", "Site crawl";
    CrawlExtract => "crawl.extract", "Page extract";
    FetchKnowledgeGraph => "fetch.knowledge_graph", "Knowledge graph";
    FetchWikipedia => "fetch.wikipedia", "Wikipedia";
    MapsSearch => "maps.search", "Places";
    MapsPlace => "maps.place", "Place details";
    MapsReviews => "maps.reviews", "Place reviews";
}

/// An intent: a built-in one, or a dotted name a manifest introduced at run time.
///
/// Serialised as its dotted name. Custom names are lower-case ASCII words of
/// letters, digits and `_`, at least two joined by dots, at most 100 bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    Builtin(BuiltinCapability),
    Custom(String),
}

/// Why a string is not a capability name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidCapability {
    pub name: String,
    pub reason: &'static str,
}

impl fmt::Display for InvalidCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a capability name: {} (expected dotted lower-case words such as search.social.mastodon)",
            self.name, self.reason
        )
    }
}

impl std::error::Error for InvalidCapability {}

impl Capability {
    pub fn name(&self) -> &str {
        match self {
            Capability::Builtin(b) => b.name(),
            Capability::Custom(name) => name,
        }
    }

    /// A few words for people; a custom capability's label is its name.
    pub fn label(&self) -> &str {
        match self {
            Capability::Builtin(b) => b.label(),
            Capability::Custom(name) => name,
        }
    }

    /// Every built-in capability.
    pub fn builtins() -> impl Iterator<Item = Capability> {
        BuiltinCapability::ALL
            .iter()
            .map(|b| Capability::Builtin(*b))
    }

    /// The social platform an intent names, e.g. `linkedin` for
    /// `search.social.linkedin`.
    pub fn social_platform(&self) -> Option<&str> {
        self.name().strip_prefix("search.social.")
    }
}

impl From<BuiltinCapability> for Capability {
    fn from(b: BuiltinCapability) -> Self {
        Capability::Builtin(b)
    }
}

impl FromStr for Capability {
    type Err = InvalidCapability;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if let Some(b) = BuiltinCapability::from_name(name) {
            return Ok(Capability::Builtin(b));
        }
        let invalid = |reason| InvalidCapability {
            name: name.to_owned(),
            reason,
        };
        if name.len() > 100 {
            return Err(invalid("longer than 100 bytes"));
        }
        if crate::verbs::Verb::named(name).is_some() {
            return Err(invalid(
                "it is a typed verb's name; a connector serves a verb through the capability the verb runs through",
            ));
        }
        let parts: Vec<&str> = name.split('.').collect();
        if parts.len() < 2 {
            return Err(invalid("it needs at least two dot-separated words"));
        }
        for part in parts {
            if part.is_empty() {
                return Err(invalid("it has an empty word between dots"));
            }
            if !part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                return Err(invalid("only a-z, 0-9 and _ may appear between dots"));
            }
            if !part.as_bytes()[0].is_ascii_lowercase() {
                return Err(invalid("each word must start with a letter"));
            }
        }
        Ok(Capability::Custom(name.to_owned()))
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Capability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_round_trip_through_their_names() {
        assert_eq!(BuiltinCapability::ALL.len(), 18);
        for cap in Capability::builtins() {
            let parsed: Capability = cap.name().parse().unwrap();
            assert_eq!(parsed, cap);
            assert!(matches!(parsed, Capability::Builtin(_)));
        }
    }

    #[test]
    fn custom_names_are_validated() {
        assert_eq!(
            "search.social.mastodon".parse::<Capability>().unwrap(),
            Capability::Custom("search.social.mastodon".into())
        );
        for bad in [
            "",
            "web",
            "search.",
            ".web",
            "search..web",
            "Search.web",
            "search.w eb",
            "search.1st",
        ] {
            let err = bad.parse::<Capability>().unwrap_err();
            assert!(err.to_string().contains("expected dotted"), "{bad}: {err}");
        }
        assert!("a.".repeat(60).parse::<Capability>().is_err());
    }

    #[test]
    fn serialises_as_the_dotted_name() {
        let cap = Capability::Builtin(BuiltinCapability::SocialLinkedin);
        assert_eq!(
            serde_json::to_string(&cap).unwrap(),
            r#""search.social.linkedin""#
        );
        let back: Capability = serde_json::from_str(r#""search.social.linkedin""#).unwrap();
        assert_eq!(back, cap);
        let err = serde_json::from_str::<Capability>(r#""Not A Name""#).unwrap_err();
        assert!(err.to_string().contains("not a capability name"), "{err}");
        assert_eq!(cap.social_platform(), Some("linkedin"));
        assert_eq!(
            Capability::Builtin(BuiltinCapability::SearchWeb).social_platform(),
            None
        );
    }
}

/// A capability as a workspace has it: what it is called and how many
/// connectors serve it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CapabilityView {
    /// The verb's dotted name (a capability's, or a typed verb's such as
    /// `web.scrape`).
    pub name: String,
    pub label: String,
    pub builtin: bool,
    /// Connectors serving it (any status).
    pub connectors: usize,
    /// Its input and output types.
    pub kind: crate::VerbKind,
    /// The capability whose connectors it walks (itself for a search).
    pub runs_through: Capability,
    /// The connectors a call would try now, in order (cheapest first,
    /// those that cannot fire left out).
    pub chain: Vec<String>,
    pub mode: crate::VerbMode,
    pub billing_unit: String,
    /// Some connector can answer it now.
    pub available: bool,
    /// Why none can, when none can (each connector's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The JSON Schema of what its call takes, made from its input type.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub input_schema: serde_json::Value,
    /// The JSON Schema of one of its results, made from its output type.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub output_schema: serde_json::Value,
}

/// On the wire a capability is its dotted name.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Capability {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "A capability's dotted name: a built-in one (search.news, \
                 search.social.linkedin, ...) or a workspace's own.",
            ))
            .pattern(Some(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"))
            .max_length(Some(100))
            .examples([serde_json::json!("search.news")])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Capability {}
