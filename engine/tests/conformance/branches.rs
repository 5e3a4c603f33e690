//! The other intents of the coded adapters whose code takes another branch
//! (another endpoint, engine, topic or answer shape), each with its
//! provider's answers for that branch. With the first fixtures they cover
//! every intent every coded adapter serves: each non-social intent has a
//! fixture of its own, and the social intents of an adapter share one
//! branch (the platform's filter on its general search), proven by one.

use crate::fixtures::Fixture;

/// The branch fixtures, each made from its adapter's first fixture with
/// what the branch changes.
pub(crate) fn branches(first: &dyn Fn(&str) -> Fixture) -> Vec<(&'static str, Fixture)> {
    let mut all = searxng(&first("searxng"));
    all.extend(serpapi(&first("serpapi")));
    all.extend(tavily(&first("tavily")));
    all.extend(brave(&first("brave")));
    all.push(("wikidata", wikidata(&first("wikidata"))));
    all
}

/// A SearXNG answer with one result: its address, its title, and the
/// answer's text (made at compile time).
macro_rules! searxng_hit {
    ($url:literal, $title:literal) => {
        (
            $url,
            $title,
            concat!(
                r#"{"query":"Acme","number_of_results":1,"results":[{"url":""#,
                $url,
                r#"","title":""#,
                $title,
                r#"","content":"About Acme","engine":"bing","publishedDate":null}],"answers":[],"infoboxes":[],"suggestions":[],"unresponsive_engines":[]}"#
            ),
        )
    };
}

fn searxng(first: &Fixture) -> Vec<(&'static str, Fixture)> {
    let branch = |intent, category, (url, title, body): (_, _, &'static str)| Fixture {
        intent,
        branch: Some(category),
        success: vec![("", body)],
        first_url: url,
        retitle: (title, "Acme, revised"),
        ..first.clone()
    };
    vec![
        (
            "searxng",
            branch(
                "search.web",
                "categories=general",
                searxng_hit!("https://acme.example/", "Acme Rockets"),
            ),
        ),
        (
            "searxng",
            branch(
                "search.news",
                "categories=news",
                searxng_hit!("https://news.example/acme", "Acme launches"),
            ),
        ),
        (
            "searxng",
            branch(
                "search.scholar",
                "categories=science",
                searxng_hit!("https://papers.example/acme", "Rockets by Acme"),
            ),
        ),
    ]
}

fn serpapi(first: &Fixture) -> Vec<(&'static str, Fixture)> {
    let news = Fixture {
        intent: "search.news",
        branch: Some("engine=google_news"),
        success: vec![(
            "",
            r#"{"search_metadata":{"status":"Success"},"news_results":[
            {"position":1,"title":"Acme launches a rocket","link":"https://news.example/acme-launch","source":{"name":"News Example","icon":"https://news.example/icon.png"},"date":"12/01/2026, 08:00 AM, +0000 UTC","snippet":"Acme launched."}]}"#,
        )],
        first_url: "https://news.example/acme-launch",
        // Google News has no page size: its first page is the answer.
        asks: None,
        retitle: ("Acme launches a rocket", "Acme launched a rocket"),
        ..first.clone()
    };
    let scholar = Fixture {
        intent: "search.scholar",
        branch: Some("engine=google_scholar"),
        success: vec![(
            "",
            r#"{"search_metadata":{"status":"Success"},"organic_results":[
            {"position":0,"title":"Rockets by Acme","result_id":"a1B2","link":"https://papers.example/acme-rockets","snippet":"We study rockets.","publication_info":{"summary":"A Acme - Journal of Rockets, 2020"}}]}"#,
        )],
        first_url: "https://papers.example/acme-rockets",
        asks: None,
        retitle: ("Rockets by Acme", "More rockets by Acme"),
        ..first.clone()
    };
    let social = Fixture {
        intent: "search.social.linkedin",
        branch: Some("site%3Alinkedin.com"),
        success: vec![(
            "",
            r#"{"search_metadata":{"status":"Success"},"organic_results":[
            {"position":1,"title":"Acme | LinkedIn","link":"https://www.linkedin.com/company/acme","snippet":"Acme makes rockets."},
            {"position":2,"title":"Acme on a blog","link":"https://blog.example/acme","snippet":"Not LinkedIn."}]}"#,
        )],
        first_url: "https://www.linkedin.com/company/acme",
        retitle: ("Acme | LinkedIn", "Acme Rockets | LinkedIn"),
        ..first.clone()
    };
    vec![("serpapi", news), ("serpapi", scholar), ("serpapi", social)]
}

fn tavily(first: &Fixture) -> Vec<(&'static str, Fixture)> {
    let news = Fixture {
        intent: "search.news",
        branch: Some(r#""topic":"news""#),
        success: vec![(
            "/search",
            r#"{"query":"Acme","answer":null,"images":[],"results":[
            {"title":"Acme launches","url":"https://news.example/acme","content":"Acme launched a rocket","score":0.88,"published_date":"Mon, 01 Dec 2026 08:00:00 GMT","raw_content":null}],"response_time":0.9}"#,
        )],
        first_url: "https://news.example/acme",
        retitle: ("Acme launches", "Acme launched"),
        ..first.clone()
    };
    let social = Fixture {
        intent: "search.social.linkedin",
        branch: Some(r#""include_domains":["linkedin.com"]"#),
        success: vec![(
            "/search",
            r#"{"query":"Acme","results":[
            {"title":"Acme | LinkedIn","url":"https://www.linkedin.com/company/acme","content":"Acme makes rockets","score":0.9,"raw_content":null}],"response_time":0.7}"#,
        )],
        first_url: "https://www.linkedin.com/company/acme",
        retitle: ("Acme | LinkedIn", "Acme Rockets | LinkedIn"),
        ..first.clone()
    };
    let extract = Fixture {
        intent: "crawl.extract",
        query: "https://acme.example/",
        branch: Some("/extract"),
        success: vec![(
            "/extract",
            r#"{"results":[{"url":"https://acme.example/","raw_content":"Acme Rockets. We build rockets in Lyon.","images":[]}],"failed_results":[],"response_time":0.02}"#,
        )],
        first_url: "https://acme.example/",
        empty: vec![(
            "/extract",
            r#"{"results":[],"failed_results":[{"url":"https://acme.example/","error":"Failed to fetch url"}],"response_time":0.02}"#,
        )],
        // One page read: there is no page size to ask.
        asks: None,
        retitle: ("We build rockets", "We built rockets"),
        ..first.clone()
    };
    let crawl = Fixture {
        intent: "crawl.site",
        query: "https://acme.example/",
        branch: Some("/crawl"),
        success: vec![(
            "/crawl",
            r#"{"base_url":"https://acme.example/","results":[
            {"url":"https://acme.example/","raw_content":"Acme Rockets. We build rockets."},
            {"url":"https://acme.example/about","raw_content":"About Acme."}],"response_time":1.4}"#,
        )],
        first_url: "https://acme.example/",
        empty: vec![(
            "/crawl",
            r#"{"base_url":"https://acme.example/","results":[],"response_time":0.5}"#,
        )],
        asks: Some(r#""limit":10"#),
        retitle: ("We build rockets", "We built rockets"),
        ..first.clone()
    };
    vec![
        ("tavily", news),
        ("tavily", social),
        ("tavily", extract),
        ("tavily", crawl),
    ]
}

fn brave(first: &Fixture) -> Vec<(&'static str, Fixture)> {
    let news = Fixture {
        intent: "search.news",
        branch: Some("/res/v1/news/search"),
        success: vec![(
            "",
            r#"{"type":"news","query":{"original":"Acme"},"results":[
            {"type":"news_result","title":"<strong>Acme</strong> launches","url":"https://news.example/acme","description":"Acme launched a <strong>rocket</strong>.","age":"1 day ago"}]}"#,
        )],
        first_url: "https://news.example/acme",
        empty: vec![(
            "",
            r#"{"type":"news","query":{"original":"Acme"},"results":[]}"#,
        )],
        retitle: ("</strong> launches", "</strong> launched"),
        ..first.clone()
    };
    let social = Fixture {
        intent: "search.social.linkedin",
        branch: Some("site%3Alinkedin.com"),
        success: vec![(
            "",
            r#"{"type":"search","query":{"original":"Acme"},"web":{"type":"search","results":[
            {"title":"Acme | LinkedIn","url":"https://www.linkedin.com/company/acme","description":"Acme makes rockets."},
            {"title":"Acme elsewhere","url":"https://blog.example/acme","description":"Not LinkedIn."}]}}"#,
        )],
        first_url: "https://www.linkedin.com/company/acme",
        retitle: ("Acme | LinkedIn", "Acme Rockets | LinkedIn"),
        ..first.clone()
    };
    vec![("brave", news), ("brave", social)]
}

fn wikidata(first: &Fixture) -> Fixture {
    Fixture {
        intent: "fetch.knowledge_graph",
        // The same two requests as a social intent's: the branch is what it
        // reads of the entity (the entity itself, not a handle).
        branch: None,
        success: vec![
            (
                "wbsearchentities",
                r#"{"searchinfo":{"search":"Acme"},"search":[{"id":"Q42","label":"Acme","description":"rocket maker","concepturi":"http://www.wikidata.org/entity/Q42"}],"success":1}"#,
            ),
            (
                "wbgetentities",
                r#"{"entities":{"Q42":{"id":"Q42","claims":{
                "P856":[{"mainsnak":{"snaktype":"value","property":"P856","datavalue":{"value":"https://acme.example/","type":"string"}}}]}}},"success":1}"#,
            ),
        ],
        first_url: "https://www.wikidata.org/wiki/Q42",
        retitle: ("rocket maker", "maker of rockets"),
        ..first.clone()
    }
}
