//! Each adapter's provider-shaped answers, as its documentation shows
//! them: a success, nothing found, a refused key, and what the suite looks
//! for in its requests.

use std::collections::HashMap;

use crate::fake::{all_ok, Answer};

#[derive(Clone)]
pub(crate) struct Fixture {
    /// The intent fired in the suite.
    pub(crate) intent: &'static str,
    /// What it is fired with (a record named Acme; its website for
    /// intents that read one).
    pub(crate) query: &'static str,
    /// A word the requests of this intent carry that shows the adapter
    /// took its branch (its endpoint, engine, topic or filter).
    pub(crate) branch: Option<&'static str>,
    /// What its answers are (JSON, or HTML for the site crawler).
    pub(crate) content_type: &'static str,
    /// Answers for a successful search, by URI word (several for multi-call adapters).
    pub(crate) success: Vec<(&'static str, &'static str)>,
    /// The URL the first result must have.
    pub(crate) first_url: &'static str,
    /// Answers meaning "nothing found".
    pub(crate) empty: Vec<(&'static str, &'static str)>,
    /// The status and body of a refused key.
    pub(crate) refused: (u16, &'static str),
    /// Whether the request must carry the key (and where to look).
    pub(crate) key_in: Option<KeyIn>,
    /// What the request says to ask for the fire's 10 results in one page
    /// (`None`: the provider has no page size).
    pub(crate) asks: Option<&'static str>,
    /// A replacement in the success answers that changes the first
    /// result's words and not its address.
    pub(crate) retitle: (&'static str, &'static str),
}

/// A first result that is the page the site crawler read (the fake's own
/// address, known only when it runs).
pub(crate) const PAGE_READ: &str = "(the page read)";

impl Fixture {
    /// `list` as the provider answers it: status 200 in its content type.
    pub(crate) fn ok(&self, list: &[(&'static str, &'static str)]) -> Vec<(&'static str, Answer)> {
        all_ok(list, self.content_type)
    }

    /// Whether `url` is the first result this fixture names.
    pub(crate) fn is_first(&self, url: &str) -> bool {
        match self.first_url {
            PAGE_READ => url.starts_with("http://127.0.0.1:"),
            first => url == first,
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) enum KeyIn {
    Bearer,
    Header(&'static str),
    Query(&'static str),
}

pub(crate) fn fixtures() -> HashMap<&'static str, Fixture> {
    let mut f = HashMap::new();
    f.insert("searxng", Fixture {
        intent: "search.social.linkedin",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"query":"Acme","number_of_results":2,"results":[
            {"url":"https://example.org/about-acme","title":"Not LinkedIn","content":"x","engine":"bing"},
            {"url":"https://www.linkedin.com/company/acme","title":"Acme | LinkedIn","content":"Acme makes rockets","engine":"google","publishedDate":null}],
            "answers":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}"#)],
        first_url: "https://www.linkedin.com/company/acme",
        empty: vec![("", r#"{"query":"Acme","number_of_results":0,"results":[],"unresponsive_engines":[["google","timeout"]]}"#)],
        refused: (403, "<html><body>403 Forbidden</body></html>"),
        key_in: None,
        asks: None,
        retitle: ("Acme | LinkedIn", "Acme Rockets | LinkedIn"),
    });
    f.insert("tavily", Fixture {
        intent: "search.web",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("/search", r#"{"query":"Acme","answer":null,"images":[],"results":[
            {"title":"Acme Rockets","url":"https://acme.example/","content":"Official site","score":0.93,"raw_content":null}],"response_time":1.2}"#)],
        first_url: "https://acme.example/",
        empty: vec![("/search", r#"{"query":"Acme","results":[],"response_time":0.4}"#)],
        refused: (401, r#"{"detail":{"error":"Unauthorized: missing or invalid API key."}}"#),
        key_in: Some(KeyIn::Bearer),
        asks: Some("\"max_results\":10"),
        retitle: ("Acme Rockets", "Acme Rocketry"),
    });
    f.insert("serpapi", Fixture {
        intent: "search.web",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"search_metadata":{"status":"Success"},"organic_results":[
            {"position":1,"title":"Acme Rockets","link":"https://acme.example/","snippet":"We build rockets."},
            {"position":2,"title":"Acme - Wikipedia","link":"https://en.wikipedia.org/wiki/Acme","snippet":"Acme is"}]}"#)],
        first_url: "https://acme.example/",
        empty: vec![("", r#"{"search_metadata":{"status":"Success"},"search_information":{"organic_results_state":"Fully empty"},"error":"Google hasn't returned any results for this query."}"#)],
        refused: (401, r#"{"error":"Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"}"#),
        key_in: Some(KeyIn::Query("api_key")),
        asks: Some("num=10"),
        retitle: ("Acme Rockets", "Acme Rocketry"),
    });
    f.insert("brave", Fixture {
        intent: "search.web",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"type":"search","query":{"original":"Acme"},"web":{"type":"search","results":[
            {"title":"<strong>Acme</strong> Rockets","url":"https://acme.example/","description":"We build <strong>rockets</strong>.","age":"2 days ago"}]}}"#)],
        first_url: "https://acme.example/",
        empty: vec![("", r#"{"type":"search","query":{"original":"Acme"},"web":{"type":"search","results":[]}}"#)],
        refused: (422, r#"{"type":"ErrorResponse","error":{"id":"x","status":422,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."}}"#),
        key_in: Some(KeyIn::Header("x-subscription-token")),
        asks: Some("count=10"),
        retitle: ("</strong> Rockets", "</strong> Rocketry"),
    });
    f.insert("wikipedia", Fixture {
        intent: "fetch.wikipedia",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"pages":[{"id":12,"key":"Acme_Corporation","title":"Acme Corporation","excerpt":"The <span class=\"searchmatch\">Acme</span> Corporation is a fictional","description":"Fictional company","thumbnail":null}]}"#)],
        first_url: "https://en.wikipedia.org/wiki/Acme_Corporation",
        empty: vec![("", r#"{"pages":[]}"#)],
        refused: (403, "Please set a user-agent and respect our robot policy"),
        key_in: None,
        asks: Some("limit=10"),
        retitle: ("\"title\":\"Acme Corporation\"", "\"title\":\"Acme Corp.\""),
    });
    f.insert("wikidata", Fixture {
        intent: "search.social.x",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![
            ("wbsearchentities", r#"{"searchinfo":{"search":"Acme"},"search":[{"id":"Q42","label":"Acme","description":"rocket maker","concepturi":"http://www.wikidata.org/entity/Q42"}],"success":1}"#),
            ("wbgetentities", r#"{"entities":{"Q42":{"id":"Q42","claims":{
                "P2002":[{"mainsnak":{"snaktype":"value","property":"P2002","datavalue":{"value":"acmerockets","type":"string"}}}],
                "P856":[{"mainsnak":{"datavalue":{"value":"https://acme.example/","type":"string"}}}]}}},"success":1}"#),
        ],
        first_url: "https://x.com/acmerockets",
        empty: vec![("wbsearchentities", r#"{"searchinfo":{"search":"Acme"},"search":[],"success":1}"#)],
        refused: (403, "<!DOCTYPE html><html><body>Forbidden</body></html>"),
        key_in: None,
        asks: Some("limit="),
        retitle: ("rocket maker", "maker of rockets"),
    });
    f.insert("google-kg", Fixture {
        intent: "fetch.knowledge_graph",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"@context":{},"@type":"ItemList","itemListElement":[{"@type":"EntitySearchResult","result":{"@id":"kg:/m/0abc","name":"Acme","@type":["Organization"],"description":"Company","url":"https://acme.example/","detailedDescription":{"articleBody":"Acme builds rockets.","url":"https://en.wikipedia.org/wiki/Acme"}},"resultScore":812.5}]}"#)],
        first_url: "https://acme.example/",
        empty: vec![("", r#"{"@context":{},"@type":"ItemList","itemListElement":[]}"#)],
        refused: (400, r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","errors":[{"reason":"badRequest"}]}}"#),
        key_in: Some(KeyIn::Query("key")),
        asks: Some("limit=10"),
        retitle: ("Acme builds rockets.", "Acme built rockets."),
    });
    f.insert("bluesky", Fixture {
        intent: "search.social.bluesky",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"actors":[{"did":"did:plc:abc","handle":"acme.bsky.social","displayName":"Acme","description":"Rockets"}],"cursor":"25"}"#)],
        first_url: "https://bsky.app/profile/acme.bsky.social",
        empty: vec![("", r#"{"actors":[]}"#)],
        refused: (401, r#"{"error":"AuthMissing","message":"Authentication Required"}"#),
        key_in: None,
        asks: Some("limit=10"),
        retitle: ("\"displayName\":\"Acme\"", "\"displayName\":\"Acme Rockets\""),
    });
    f.insert("youtube", Fixture {
        intent: "search.social.youtube",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"kind":"youtube#searchListResponse","items":[{"kind":"youtube#searchResult","id":{"kind":"youtube#channel","channelId":"UC123abc"},"snippet":{"title":"Acme","description":"Our channel","publishedAt":"2015-01-01T00:00:00Z"}}]}"#)],
        first_url: "https://www.youtube.com/channel/UC123abc",
        empty: vec![("", r#"{"kind":"youtube#searchListResponse","items":[]}"#)],
        refused: (400, r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","errors":[{"reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}"#),
        key_in: Some(KeyIn::Query("key")),
        asks: Some("maxResults=10"),
        retitle: ("Our channel", "Our only channel"),
    });
    f.insert("openalex", Fixture {
        intent: "search.scholar",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"meta":{"count":1},"results":[{"id":"https://openalex.org/W1","doi":"https://doi.org/10.1/acme","display_name":"Rockets by Acme","publication_year":2020,"cited_by_count":3,"primary_location":{"source":{"display_name":"Journal of Rockets"}}}]}"#)],
        first_url: "https://doi.org/10.1/acme",
        empty: vec![("", r#"{"meta":{"count":0},"results":[]}"#)],
        refused: (403, r#"{"error":"Forbidden","message":"API key invalid"}"#),
        key_in: None,
        asks: Some("per-page=10"),
        retitle: ("Rockets by Acme", "More rockets by Acme"),
    });
    f.insert("gdelt", Fixture {
        intent: "search.news",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"articles":[{"url":"https://news.example/acme-launch","url_mobile":"","title":"Acme launches","seendate":"20261201T120000Z","socialimage":"","domain":"news.example","language":"English","sourcecountry":"France"}]}"#)],
        first_url: "https://news.example/acme-launch",
        // GDELT answers nothing at all when nothing matches.
        empty: vec![("", "")],
        refused: (403, "<html><body>Forbidden</body></html>"),
        key_in: None,
        asks: Some("maxrecords=10"),
        retitle: ("Acme launches", "Acme launched"),
    });
    f.insert("hn-algolia", Fixture {
        intent: "search.news",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![
            ("&page=0", r#"{"hits":[{"url":"https://acme.example/launch","title":"Acme launches","story_text":"Rockets"}],"nbHits":2,"page":0,"nbPages":2}"#),
            ("&page=1", r#"{"hits":[{"url":"https://acme.example/landing","title":"Acme lands","story_text":null}],"nbHits":2,"page":1,"nbPages":2}"#),
        ],
        first_url: "https://acme.example/launch",
        empty: vec![("", r#"{"hits":[],"nbHits":0,"page":0,"nbPages":0}"#)],
        refused: (403, r#"{"message":"Invalid Application-ID or API key","status":403}"#),
        key_in: None,
        asks: Some("hitsPerPage=10"),
        retitle: ("Acme launches", "Acme launched"),
    });
    f.insert("github-users", Fixture {
        intent: "search.social.github",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![
            ("&page=1", r#"{"total_count":2,"incomplete_results":false,"items":[{"login":"acme","html_url":"https://github.com/acme","type":"Organization"}]}"#),
            ("&page=2", r#"{"total_count":2,"incomplete_results":false,"items":[{"login":"acme-labs","html_url":"https://github.com/acme-labs","type":"Organization"}]}"#),
        ],
        first_url: "https://github.com/acme",
        empty: vec![("", r#"{"total_count":0,"incomplete_results":false,"items":[]}"#)],
        refused: (401, r#"{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}"#),
        key_in: None,
        asks: Some("per_page=10"),
        retitle: ("\"login\":\"acme\"", "\"login\":\"acme-rockets\""),
    });
    f.insert("mastodon-accounts", Fixture {
        intent: "search.social.mastodon",
        query: "Acme",
        branch: None,
        content_type: "application/json",
        success: vec![("", r#"{"accounts":[{"id":"1","username":"acme","acct":"acme","display_name":"Acme","url":"https://mastodon.social/@acme","note":"Rockets"}],"statuses":[],"hashtags":[]}"#)],
        first_url: "https://mastodon.social/@acme",
        empty: vec![("", r#"{"accounts":[],"statuses":[],"hashtags":[]}"#)],
        refused: (401, r#"{"error":"The access token is invalid"}"#),
        key_in: None,
        asks: Some("limit=10"),
        retitle: ("\"display_name\":\"Acme\"", "\"display_name\":\"Acme Rockets\""),
    });
    f.insert("site-crawler", crate::site::fixture());
    crate::maps::fixtures(&mut f);
    f
}

/// Every fixture, by adapter id: each adapter's first, then the other
/// branches of the coded adapters ([`crate::branches`]).
pub(crate) fn all_fixtures() -> Vec<(&'static str, Fixture)> {
    let first = fixtures();
    let mut all: Vec<(&'static str, Fixture)> =
        first.iter().map(|(id, f)| (*id, f.clone())).collect();
    all.sort_by_key(|(id, _)| *id);
    all.extend(crate::branches::branches(&|id: &str| first[id].clone()));
    all.extend(crate::site::branches());
    all.extend(crate::maps::branches(&|id: &str| first[id].clone()));
    all
}
