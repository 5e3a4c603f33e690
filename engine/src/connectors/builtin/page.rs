//! Reading an HTML page: what it says about itself (title, description,
//! language, canonical address, links) and its main text, found by
//! `dom_smoothie` (a port of Mozilla's Readability), never by patterns.
//! A page read for `crawl.extract` hands its text to the `web.scrape` verb
//! in [`PageText`], the shape every connector serving it writes into its
//! result's `raw`.

use dom_query::Document;
use dom_smoothie::{Config, Readability, TextMode};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::urlnorm::parse_web_url;

/// The most characters of main text kept for one page.
pub const MAX_TEXT_CHARS: usize = 200_000;
/// Pages with more elements than this are not searched for their main
/// text (the search's cost grows with them); their body's text is kept.
const MAX_ELEMENTS: usize = 20_000;

/// What a page says about itself.
#[derive(Debug, Default, PartialEq)]
pub struct PageFacts {
    pub title: String,
    pub description: String,
    /// Absolute http(s) links, in page order, without duplicates.
    pub links: Vec<String>,
    /// The page's language as its `<html lang>` says, if it does.
    pub language: Option<String>,
    /// The address the page names as its own (`<link rel=canonical>`,
    /// else `og:url`), made absolute.
    pub canonical_url: Option<String>,
}

/// A page's text as a `crawl.extract` connector found it: what the
/// `web.scrape` verb reads from a result's `raw`. Provider text: show it
/// as text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PageText {
    /// The page's main text, whitespace tidied, at most
    /// [`MAX_TEXT_CHARS`] characters.
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_url: Option<String>,
    /// The page was longer than the connector reads; its text is of the
    /// part read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text of at most `max` characters, cut at a character boundary.
pub fn at_most(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text,
    }
}

/// Reads the title, description, language, canonical address and links of
/// an HTML page.
pub fn page_facts(base: &Url, html: &str) -> PageFacts {
    facts_of(&Document::from(html), base)
}

fn facts_of(doc: &Document, base: &Url) -> PageFacts {
    let first_text = |css: &str| -> Option<String> {
        let found = doc.try_select(css)?;
        let text = squeeze(&found.nodes().first()?.text());
        (!text.is_empty()).then_some(text)
    };
    let attr_of = |css: &str, name: &str| -> Option<String> {
        doc.try_select(css)?
            .nodes()
            .iter()
            .find_map(|n| n.attr(name))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let absolute = |href: &str| -> Option<String> {
        base.join(href.trim())
            .ok()
            .and_then(|u| parse_web_url(u.as_str()))
            .map(|u| u.to_string())
    };
    let title = attr_of(r#"meta[property="og:title"]"#, "content")
        .or_else(|| first_text("title"))
        .unwrap_or_default();
    let description = attr_of(r#"meta[name="description"]"#, "content")
        .or_else(|| attr_of(r#"meta[property="og:description"]"#, "content"))
        .unwrap_or_default();
    let language = attr_of("html[lang]", "lang");
    let canonical_url = attr_of(r#"link[rel="canonical"]"#, "href")
        .or_else(|| attr_of(r#"meta[property="og:url"]"#, "content"))
        .and_then(|href| absolute(&href));
    let mut links: Vec<String> = Vec::new();
    if let Some(anchors) = doc.try_select("a[href]") {
        for a in anchors.nodes() {
            let Some(abs) = a.attr("href").and_then(|href| absolute(&href)) else {
                continue;
            };
            if !links.contains(&abs) {
                links.push(abs);
            }
        }
    }
    PageFacts {
        title,
        description,
        links,
        language,
        canonical_url,
    }
}

/// A page's facts and its main text. CPU work on up to the crawler's
/// byte limit: call it off the async threads.
pub fn read_page(base: &Url, html: &str) -> (PageFacts, String) {
    let doc = Document::from(html);
    let facts = facts_of(&doc, base);
    let config = Config {
        max_elements_to_parse: MAX_ELEMENTS,
        text_mode: TextMode::Formatted,
        ..Config::default()
    };
    let text = match Readability::with_document(doc, Some(base.as_str()), Some(config)) {
        Ok(mut reader) => match reader.parse() {
            Ok(article) => article.text_content.to_string(),
            // Too big to search, or no main part found: the body's text,
            // which is what a reader would see.
            Err(_) => reader
                .doc
                .try_select("body")
                .map(|body| squeeze(&body.text()))
                .unwrap_or_default(),
        },
        Err(_) => String::new(),
    };
    (facts, at_most(tidy(&text), MAX_TEXT_CHARS))
}

/// Each line's whitespace squeezed and blank runs collapsed to one blank
/// line, so paragraphs stay apart.
fn tidy(text: &str) -> String {
    let mut out = String::new();
    let mut blank = false;
    for line in text.lines().map(squeeze) {
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank { "\n\n" } else { "\n" });
        }
        out.push_str(&line);
        blank = false;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_give_title_description_and_absolute_links() {
        let base = Url::parse("https://acme.example/about/").unwrap();
        let html = r#"<html lang="en-GB"><head><title> Acme
            Rockets </title><meta name="description" content="We build rockets.">
            <link rel="canonical" href="/about"></head>
            <body><a href="https://www.linkedin.com/company/acme">in</a><a href="/team">team</a>
            <a href="javascript:alert(1)">x</a><a href="https://www.linkedin.com/company/acme">again</a></body></html>"#;
        let facts = page_facts(&base, html);
        assert_eq!(facts.title, "Acme Rockets");
        assert_eq!(facts.description, "We build rockets.");
        assert_eq!(facts.language.as_deref(), Some("en-GB"));
        assert_eq!(
            facts.canonical_url.as_deref(),
            Some("https://acme.example/about")
        );
        assert_eq!(
            facts.links,
            [
                "https://www.linkedin.com/company/acme",
                "https://acme.example/team"
            ]
        );
    }

    #[test]
    fn the_main_text_leaves_out_navigation_and_scripts() {
        let base = Url::parse("https://acme.example/news/launch").unwrap();
        let article = "The launch went well. ".repeat(40);
        let html = format!(
            r#"<html><head><title>Launch</title><script>var secret = "x";</script></head><body>
            <nav><a href="/">Home</a> <a href="/shop">Shop</a></nav>
            <article><h1>Launch day</h1><p>{article}</p><p>Second paragraph of the story, long enough to count as one.</p></article>
            <footer>Copyright Acme</footer></body></html>"#
        );
        let (facts, text) = read_page(&base, &html);
        assert_eq!(facts.title, "Launch");
        assert!(text.contains("The launch went well."), "{text}");
        assert!(text.contains("Second paragraph"), "{text}");
        assert!(!text.contains("var secret"), "{text}");
        assert!(!text.contains("Shop"), "{text}");
    }

    #[test]
    fn a_page_without_a_main_part_gives_its_body_text() {
        let base = Url::parse("https://acme.example/").unwrap();
        let (_, text) = read_page(&base, "<html><body><p>Just a line.</p></body></html>");
        assert!(text.contains("Just a line."), "{text}");
    }

    #[test]
    fn long_text_is_cut_at_a_character() {
        assert_eq!(at_most("ééé".to_owned(), 2), "éé");
        assert_eq!(at_most("ab".to_owned(), 5), "ab");
        assert_eq!(tidy("  a  b \n\n\n c \n d"), "a b\n\nc\nd");
    }
}
