//! The site crawler: fetches a record's own website and reads its title,
//! description and the social profiles it links to. It only ever connects to
//! public addresses: every host is resolved first, loopback, private,
//! link-local and other internal ranges are refused unless allow-listed, the
//! connection is pinned to the checked address, and each redirect is checked
//! again. Answers are capped in bytes and redirects.

use std::time::Duration;

use async_trait::async_trait;
use model::{BuiltinCapability as B, Capability, ConnectorProfile, CostTier, RateHints};
use reqwest::header::{CONTENT_TYPE, LOCATION};
use url::Url;

use super::page::{self, PageText};
use super::social;
use crate::connectors::http::redact;
use crate::connectors::receipts::Sending;
use crate::connectors::registry::Registration;
use crate::connectors::seam::{Connector, ConnectorResult, FireError, FireOpts, Found};
use crate::urlnorm::parse_web_url;

pub use crate::connectors::guard::{internal, AllowList, Outbound, ALLOW_VAR};

pub const ID: &str = "site-crawler";
const MAX_BYTES: usize = 2 * 1024 * 1024;
const MAX_REDIRECTS: usize = 5;
/// Record fields that hold a website, tried in order when the query is not one.
const WEBSITE_FIELDS: &[&str] = &["website", "url", "homepage", "site", "domain"];

pub fn registration() -> Registration {
    let mut capabilities: Vec<Capability> = vec![B::CrawlSite.into(), B::CrawlExtract.into()];
    capabilities.extend(social::social_capabilities());
    Registration {
        profile: ConnectorProfile {
            id: ID.to_owned(),
            display_name: "Own website (site crawler)".to_owned(),
            short_label: "Site".to_owned(),
            capabilities,
            cost_tier: CostTier::Free,
            requires_env: Vec::new(),
            rate_hints: RateHints {
                per_second: Some(4.0),
                daily_cap: None,
            },
            cost: None,
        },
        // Its errors are about one record's website, not about the crawler.
        suspends_on_errors: false,
    }
}

/// The site crawler.
#[derive(Debug)]
pub struct SiteCrawler {
    /// Every hop, redirects included, goes through the outbound guard.
    pub outbound: Outbound,
    /// How long one request may take.
    pub timeout: Option<Duration>,
}

impl SiteCrawler {
    /// Fetches a page, following and re-checking redirects.
    async fn fetch(&self, start: Url) -> Result<Fetched, FireError> {
        let mut url = start;
        for _ in 0..=MAX_REDIRECTS {
            let host = url.host_str().unwrap_or_default().to_owned();
            let timeout = self.timeout.unwrap_or(Duration::from_secs(10));
            let request =
                self.outbound
                    .request("site crawler", reqwest::Method::GET, &url, timeout)?;
            let (client, request) = request.build_split();
            let request = request.map_err(|e| {
                crate::connectors::http::transport_error(&format!("site crawler ({host})"), e, &[])
            })?;
            let sending = Sending::start(&request, &[]);
            let mut response = client.execute(request).await.map_err(|e| {
                sending.finish(0);
                if e.is_timeout() {
                    FireError::Timeout { after: timeout }
                } else {
                    crate::connectors::http::transport_error(
                        &format!("site crawler ({host})"),
                        e,
                        &[],
                    )
                }
            })?;
            let status = response.status();
            sending.answered(status);
            // A redirect or a refusal ends the exchange here; a page's body,
            // read below, finishes it again with its size.
            sending.finish(0);
            if status.is_redirection() {
                let next = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|l| url.join(l).ok())
                    .filter(|u| matches!(u.scheme(), "http" | "https"))
                    .ok_or_else(|| FireError::Malformed {
                        reason: format!("site crawler: {host} redirects nowhere usable"),
                    })?;
                url = next;
                continue;
            }
            if !status.is_success() {
                // The site's own answer: the request's trouble, said plainly
                // (a site's error page is not worth quoting).
                return Err(FireError::Request {
                    reason: format!("site crawler: {host} answered HTTP {}", status.as_u16()),
                });
            }
            let is_html = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_none_or(|ct| ct.contains("html"));
            if !is_html {
                return Err(FireError::Malformed {
                    reason: format!("site crawler: {host} did not answer with a web page"),
                });
            }
            let mut body = Vec::new();
            let mut truncated = false;
            let read = loop {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        body.extend_from_slice(&chunk);
                        if body.len() > MAX_BYTES {
                            // A page this long still has its head and links in the first bytes.
                            body.truncate(MAX_BYTES);
                            truncated = true;
                            break Ok(());
                        }
                    }
                    Ok(None) => break Ok(()),
                    Err(e) => {
                        break Err(FireError::Upstream {
                            reason: format!(
                                "site crawler: the page of {host} was cut off: {}",
                                e.without_url()
                            ),
                        })
                    }
                }
            };
            if read.is_ok() {
                // Cut at the most the crawler reads: the hash is of what was read.
                sending.payload(&body);
            }
            sending.finish(body.len());
            read?;
            return Ok(Fetched {
                url,
                html: String::from_utf8_lossy(&body).into_owned(),
                truncated,
            });
        }
        Err(FireError::Malformed {
            reason: format!("site crawler: more than {MAX_REDIRECTS} redirects"),
        })
    }
}

/// A page as fetched: where the redirects ended, its HTML, and whether it
/// was longer than the crawler reads.
struct Fetched {
    url: Url,
    html: String,
    truncated: bool,
}

/// The website a fire is about: the query when it is an address, else the
/// record's website field (a bare domain gets `https://`).
fn website(query: &str, opts: &FireOpts) -> Option<Url> {
    let candidates =
        std::iter::once(query.to_owned()).chain(WEBSITE_FIELDS.iter().filter_map(|f| {
            opts.record_fields
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(f))
                .map(|(_, v)| v.clone())
        }));
    for c in candidates {
        let c = c.trim();
        if c.is_empty() || c.contains(char::is_whitespace) {
            continue;
        }
        if let Some(u) = parse_web_url(c) {
            return Some(u);
        }
        if c.contains('.') && !c.contains("://") {
            if let Some(u) = parse_web_url(&format!("https://{c}")) {
                return Some(u);
            }
        }
    }
    None
}

#[async_trait]
impl Connector for SiteCrawler {
    async fn fire(
        &self,
        intent: &Capability,
        query: &str,
        opts: &FireOpts,
    ) -> Result<Found, FireError> {
        let Some(start) = website(query, opts) else {
            return Err(FireError::Request {
                reason: "site crawler: the record has no website (a 'website' column, or a query that is an address)".to_owned(),
            });
        };
        // Whatever the record's site answers (a 429 asking for years, a
        // refusal, a timeout) is about that site, never the crawler's: the
        // crawler's status is everyone's, and a site is whoever runs it.
        let fetched = self
            .fetch(start)
            .await
            .map_err(FireError::into_the_requests_own)?;
        let extract = intent.name() == B::CrawlExtract.name();
        let base = fetched.url.clone();
        // Parsing up to 2 MiB of HTML is CPU work: off the async threads.
        let (facts, text) = tokio::task::spawn_blocking(move || {
            if extract {
                page::read_page(&base, &fetched.html)
            } else {
                (page::page_facts(&base, &fetched.html), String::new())
            }
        })
        .await
        .map_err(|e| FireError::Malformed {
            reason: format!("site crawler: the page could not be read ({e})"),
        })?;
        let url = fetched.url;
        if let Some(platform) = social::platform(intent) {
            return Ok(facts
                .links
                .iter()
                .filter(|l| platform.owns(l))
                .take(opts.max_results.max(1))
                .map(|l| ConnectorResult {
                    url: l.clone(),
                    title: format!(
                        "{} linked from {}",
                        intent.label(),
                        url.host_str().unwrap_or_default()
                    ),
                    snippet: redact(&facts.title, &[]),
                    raw: serde_json::json!({ "found_on": url.as_str() }),
                })
                .collect());
        }
        let raw = if extract {
            serde_json::to_value(PageText {
                content: text,
                description: Some(facts.description.clone()).filter(|d| !d.is_empty()),
                language: facts.language.clone(),
                canonical_url: facts.canonical_url.clone(),
                truncated: fetched.truncated,
            })
            .unwrap_or_default()
        } else {
            let socials: Vec<&String> = facts
                .links
                .iter()
                .filter(|l| {
                    social::social_capabilities()
                        .iter()
                        .any(|c| social::platform(c).is_some_and(|p| p.owns(l)))
                })
                .collect();
            serde_json::json!({ "social_links": socials })
        };
        Ok(Found::from(vec![ConnectorResult {
            title: if facts.title.is_empty() {
                url.host_str().unwrap_or_default().to_owned()
            } else {
                facts.title
            },
            snippet: facts.description,
            raw,
            url: url.to_string(),
        }]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_named() {
        for (ip, why) in [
            ("127.0.0.1", "a loopback address"),
            ("10.1.2.3", "a private address"),
            ("172.20.0.1", "a private address"),
            ("192.168.1.1", "a private address"),
            ("169.254.169.254", "a link-local address"),
            ("100.100.0.1", "a carrier-grade NAT address"),
            ("0.0.0.0", "not a host address"),
            ("::1", "a loopback address"),
            ("fe80::1", "a link-local address"),
            ("fd00::1", "a private address"),
            ("::ffff:127.0.0.1", "a loopback address"),
        ] {
            assert_eq!(internal(ip.parse().unwrap()), Some(why), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
            assert_eq!(internal(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn allow_lists_name_hosts_and_networks() {
        let allow = AllowList::parse("intranet.local, 10.1.0.0/16,127.0.0.1, bad entry!");
        assert!(allow.allows("INTRANET.local", "10.9.9.9".parse().unwrap()));
        assert!(allow.allows("x", "10.1.200.3".parse().unwrap()));
        assert!(allow.allows("x", "127.0.0.1".parse().unwrap()));
        assert!(!allow.allows("x", "10.2.0.1".parse().unwrap()));
    }

    #[tokio::test]
    async fn internal_targets_are_refused_before_connecting() {
        let crawler = SiteCrawler {
            outbound: Outbound::new(AllowList::default()),
            timeout: None,
        };
        for target in [
            // A name is checked by the resolver, an address before sending.
            "http://localhost:9/",
            "http://127.0.0.1:9/",
            "http://[::1]:9/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/",
        ] {
            let err = crawler
                .fire(&B::CrawlSite.into(), target, &FireOpts::default())
                .await
                .unwrap_err();
            assert!(
                matches!(&err, FireError::Request { reason } if reason.contains("refused")),
                "{target}: {err:?}"
            );
        }
    }

    #[test]
    fn the_website_comes_from_the_query_or_the_record() {
        let mut opts = FireOpts::default();
        assert_eq!(
            website("https://acme.example", &opts).unwrap().as_str(),
            "https://acme.example/"
        );
        assert!(website("Acme Rockets", &opts).is_none());
        opts.record_fields
            .insert("Website".into(), "acme.example".into());
        assert_eq!(
            website("Acme Rockets", &opts).unwrap().as_str(),
            "https://acme.example/"
        );
    }
}
