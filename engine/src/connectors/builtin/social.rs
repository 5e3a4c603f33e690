//! Social platforms for general search engines: the `site:` filter that turns
//! a web search into a platform search, and the domains a result must be on
//! to count.

use model::Capability;

use crate::connectors::seam::ConnectorResult;
use crate::urlnorm::parse_web_url;

/// A social platform a `search.social.*` intent names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Platform {
    /// The last word of the intent, e.g. `linkedin`.
    pub name: &'static str,
    /// Hosts (and their subdomains) whose pages are this platform's.
    pub domains: &'static [&'static str],
    /// What narrows a web search to the platform.
    pub site_filter: &'static str,
}

const PLATFORMS: &[Platform] = &[
    Platform {
        name: "linkedin",
        domains: &["linkedin.com"],
        site_filter: "(site:linkedin.com/company OR site:linkedin.com/in)",
    },
    Platform {
        name: "facebook",
        domains: &["facebook.com", "fb.com"],
        site_filter: "site:facebook.com",
    },
    Platform {
        name: "x",
        domains: &["x.com", "twitter.com"],
        site_filter: "(site:x.com OR site:twitter.com)",
    },
    Platform {
        name: "bluesky",
        domains: &["bsky.app"],
        site_filter: "site:bsky.app/profile",
    },
    Platform {
        name: "instagram",
        domains: &["instagram.com"],
        site_filter: "site:instagram.com",
    },
    Platform {
        name: "youtube",
        domains: &["youtube.com", "youtu.be"],
        site_filter: "site:youtube.com",
    },
    Platform {
        name: "tiktok",
        domains: &["tiktok.com"],
        site_filter: "site:tiktok.com",
    },
    Platform {
        name: "threads",
        domains: &["threads.net", "threads.com"],
        site_filter: "(site:threads.net OR site:threads.com)",
    },
];

/// Every social intent general search engines can serve.
pub fn social_capabilities() -> Vec<Capability> {
    PLATFORMS
        .iter()
        .filter_map(|p| format!("search.social.{}", p.name).parse().ok())
        .collect()
}

/// The platform a social intent names.
pub fn platform(intent: &Capability) -> Option<&'static Platform> {
    let name = intent.social_platform()?;
    PLATFORMS.iter().find(|p| p.name == name)
}

impl Platform {
    /// The query for a general search engine.
    pub fn query(&self, query: &str) -> String {
        format!("{query} {}", self.site_filter)
    }

    /// Whether a URL is on this platform.
    pub fn owns(&self, url: &str) -> bool {
        parse_web_url(url)
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .is_some_and(|host| {
                self.domains
                    .iter()
                    .any(|d| host == *d || host.ends_with(&format!(".{d}")))
            })
    }
}

/// For a social intent: the platform query and a filter keeping only the
/// platform's pages. For any other intent: the query as it is, no filter.
pub fn prepare(intent: &Capability, query: &str) -> (String, Option<&'static Platform>) {
    match platform(intent) {
        Some(p) => (p.query(query), Some(p)),
        None => (query.to_owned(), None),
    }
}

/// Keeps only the platform's pages when there is a platform.
pub fn keep(platform: Option<&Platform>, results: Vec<ConnectorResult>) -> Vec<ConnectorResult> {
    match platform {
        Some(p) => results.into_iter().filter(|r| p.owns(&r.url)).collect(),
        None => results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_social_intent_has_a_platform() {
        for cap in Capability::builtins().filter(|c| c.social_platform().is_some()) {
            assert!(platform(&cap).is_some(), "{cap}");
        }
        assert_eq!(social_capabilities().len(), 8);
    }

    #[test]
    fn only_the_platforms_pages_are_kept() {
        let li = platform(&"search.social.linkedin".parse().unwrap()).unwrap();
        assert!(li.owns("https://www.linkedin.com/company/acme"));
        assert!(li.owns("https://fr.linkedin.com/in/ana"));
        assert!(!li.owns("https://linkedin.com.evil.example/x"));
        assert!(!li.owns("https://notlinkedin.com/"));
        assert!(!li.owns("javascript:alert(1)"));
        let (q, p) = prepare(&"search.social.x".parse().unwrap(), "Acme");
        assert_eq!(q, "Acme (site:x.com OR site:twitter.com)");
        assert_eq!(p.unwrap().name, "x");
        let (q, p) = prepare(&"search.web".parse().unwrap(), "Acme");
        assert_eq!((q.as_str(), p), ("Acme", None));
    }
}
