use super::*;

const GOOD: &str = r#"
id = "hn"
display_name = "Hacker News"
short_label = "HN"
capabilities = ["search.news", "community.forum"]
cost_tier = "free"
requires_env = ["HN_KEY"]
rate_hints = { per_second = 2.0 }
cost = { per_call = 0.005, unit = "USD", bills_empty = false, by_capability = { "community.forum" = 0.01 } }

[request]
url = "https://hn.example.org/api/search"
query = { q = "{{query}}", n = "{{max_results}}", city = "{{record.city}}" }
headers = { Authorization = "Bearer {{secret.HN_KEY}}" }

[response]
items = "$.hits[*]"
url = "$.url"
title = "$.title"
snippet = "$.text"

[pagination]
kind = "page"
param = "page"
max_pages = 3

[[errors]]
status = 403
body_contains = "rate limit"
means = "rate_limited"
"#;

#[test]
fn a_good_manifest_checks_and_registers_what_it_says() {
    let m = Manifest::parse(GOOD, Format::Toml).unwrap();
    let r = m.registration();
    assert_eq!(r.profile.id, "hn");
    assert_eq!(r.profile.capabilities.len(), 2);
    assert_eq!(r.profile.capabilities[1].name(), "community.forum");
    assert_eq!(r.profile.requires_env, ["HN_KEY"]);
    assert_eq!(r.profile.rate_hints.per_second, Some(2.0));
    let cost = r.profile.cost.unwrap();
    assert_eq!(cost.of_call("search.news").in_unit(&cost.unit), "0.005 USD");
    assert_eq!(
        cost.of_call("community.forum").in_unit(&cost.unit),
        "0.01 USD"
    );
    assert!(!cost.bills_empty);
    // The same manifest as JSON.
    let json = serde_json::to_string(&m.spec).unwrap();
    assert_eq!(Manifest::parse(&json, Format::Json).unwrap().spec, m.spec);
}

/// Replaces `from` (which must be in GOOD) with `to`.
fn broken(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "{from}");
    GOOD.replacen(from, to, 1)
}

#[test]
fn every_kind_of_mistake_is_named_with_its_field() {
    let cases: Vec<(String, &str, &str)> = vec![
        (
            broken("id = \"hn\"", "id = \"Hacker News\""),
            "id",
            "not an id",
        ),
        (
            broken("display_name = \"Hacker News\"", "display_name = \"\""),
            "display_name",
            "1 to 80",
        ),
        (
            broken("short_label = \"HN\"", "short_label = \"\""),
            "short_label",
            "1 to 16",
        ),
        (
            broken(
                "capabilities = [\"search.news\", \"community.forum\"]",
                "capabilities = []",
            ),
            "capabilities",
            "at least one",
        ),
        (
            broken("\"community.forum\"", "\"Not A Capability\""),
            "capabilities (line 5)",
            "not a capability name",
        ),
        (
            broken("cost_tier = \"free\"", "cost_tier = \"cheap\""),
            "cost_tier (line 6)",
            "unknown variant",
        ),
        (
            broken("requires_env = [\"HN_KEY\"]", "requires_env = [\"hn key\"]"),
            "requires_env[0]",
            "not a secret name",
        ),
        (
            broken("per_second = 2.0", "per_second = -1.0"),
            "rate_hints.per_second",
            "give 0.001 to 10000 calls a second",
        ),
        (
            broken("\"$.hits[*]\"", "\"$.hits[?match(@.title, '(a+)+$')]\""),
            "response.items",
            "regular expressions are not offered",
        ),
        (
            broken("per_second = 2.0", "per_second = 1e-30"),
            "rate_hints.per_second",
            "out of range",
        ),
        (
            broken("unit = \"USD\"", "unit = \"<b>\""),
            "cost.unit",
            "not a unit",
        ),
        (
            broken("per_call = 0.005", "per_call = -1"),
            "cost",
            "not an amount",
        ),
        (
            broken("\"community.forum\" = 0.01", "\"search.web\" = 0.01"),
            "cost.by_capability.search.web",
            "one of the connector's capabilities",
        ),
        (
            broken(
                "url = \"https://hn.example.org/api/search\"",
                "url = \"ftp://hn.example.org/\"",
            ),
            "request.url",
            "scheme",
        ),
        (
            broken(
                "url = \"https://hn.example.org/api/search\"",
                "url = \"https://{{record.host}}/api\"",
            ),
            "request.url",
            "host must be written out",
        ),
        (
            broken(
                "url = \"https://hn.example.org/api/search\"",
                "url = \"https://hn.example.org/{{secret.HN_KEY}}\"",
            ),
            "request.url",
            "header or a query",
        ),
        (
            broken("q = \"{{query}}\"", "q = \"{{querry}}\""),
            "request.query.q",
            "unknown placeholder",
        ),
        (
            broken("q = \"{{query}}\"", "q = \"{{query\""),
            "request.query.q",
            "never closes",
        ),
        (
            broken("Bearer {{secret.HN_KEY}}", "Bearer {{secret.OTHER}}"),
            "request.headers.Authorization",
            "neither requires_env nor optional_env",
        ),
        (
            broken("[request]", "[request]\nmethod = \"DELETE\""),
            "request.method",
            "GET or POST",
        ),
        (
            broken("[request]", "[request]\nbody = { q = \"x\" }"),
            "request.body",
            "POST",
        ),
        (
            broken("items = \"$.hits[*]\"", "items = \"hits\""),
            "response.items",
            "JSONPath",
        ),
        (
            broken("title = \"$.title\"", "title = \"$.[\""),
            "response.title",
            "JSONPath",
        ),
        (
            broken("items = \"$.hits[*]\"", "items = \"$..hits..*\""),
            "response.items",
            "more than one descendant step",
        ),
        (
            broken(
                "items = \"$.hits[*]\"",
                &format!("items = \"$.{}\"", "a".repeat(300)),
            ),
            "response.items",
            "at most 300 characters",
        ),
        (
            broken("max_pages = 3", "max_pages = 50"),
            "pagination.max_pages",
            "1 to 10",
        ),
        (
            broken("kind = \"page\"", "kind = \"cursor\""),
            "pagination.cursor_path",
            "needs the JSONPath",
        ),
        (
            broken("status = 403", "status = 200"),
            "errors[0].status",
            "400 to 599",
        ),
        (
            broken("means = \"rate_limited\"", "means = \"sad\""),
            "errors.means (line",
            "unknown variant",
        ),
        (
            broken("[response]", "[response]\nurl_template = \"x\""),
            "response.url_template (line",
            "unknown field",
        ),
        (
            broken("title = \"$.title\"\n", ""),
            "line",
            "missing field `title`",
        ),
        ("id = [".to_owned(), "id (line 1)", "unclosed array"),
        (
            broken(
                "cost_tier = \"free\"",
                "cost_tier = \"free\"\ncolour = \"red\"",
            ),
            "colour (line 7)",
            "not a manifest key",
        ),
    ];
    assert!(cases.len() >= 15);
    for (text, field, words) in cases {
        let err = Manifest::parse(&text, Format::Toml).unwrap_err();
        assert!(
            err.0
                .iter()
                .any(|p| p.field.starts_with(field) && p.message.contains(words)),
            "expected {field}: …{words}… in {err}"
        );
    }
}

#[test]
fn several_mistakes_are_reported_together() {
    let text = broken("id = \"hn\"", "id = \"\"").replace("max_pages = 3", "max_pages = 0");
    let err = Manifest::parse(&text, Format::Toml).unwrap_err();
    let fields: Vec<&str> = err.0.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["id", "pagination.max_pages"]);
}

#[test]
fn templates_fill_from_the_query_the_record_and_secrets() {
    let record = BTreeMap::from([("city".to_owned(), "Lyon".to_owned())]);
    let secret = |name: &str| (name == "K").then(|| "s3cret".to_owned());
    let out = render(
        "{{query}} in {{record.city}} ({{record.name}}), {{max_results}}, {{secret.K}}",
        "acme",
        5,
        &record,
        "Acme",
        &secret,
    )
    .unwrap();
    assert_eq!(out, "acme in Lyon (Acme), 5, s3cret");
    assert_eq!(
        render("{{record.nope}}", "", 1, &record, "", &secret).unwrap(),
        ""
    );
    assert_eq!(
        render("{{secret.MISSING}}", "", 1, &record, "", &secret).unwrap_err(),
        RenderError::MissingSecret("MISSING".to_owned())
    );
}

#[test]
fn the_editor_form_writes_a_manifest_that_checks() {
    let form = model::ManifestForm {
        id: "exa-search".into(),
        display_name: "Exa \"neural\" search".into(),
        short_label: "Exa".into(),
        capability: "search.web".into(),
        cost_tier: "free-tier".into(),
        url: "https://api.exa.ai/search".into(),
        query_param: "q".into(),
        header_name: "Authorization".into(),
        header_value: "Bearer {{secret.EXA_API_KEY}}".into(),
        items: "$.results[*]".into(),
        item_url: "$.url".into(),
        item_title: "$.title".into(),
        item_snippet: "$.text".into(),
    };
    let m = Manifest::parse(&form.to_toml(), Format::Toml).unwrap();
    assert_eq!(m.spec.profile.display_name, "Exa \"neural\" search");
    assert_eq!(m.spec.profile.cost_tier, model::CostTier::FreeTier);
    assert_eq!(m.spec.profile.requires_env, ["EXA_API_KEY"]);
    assert_eq!(m.spec.http.request.query["q"], "{{query}}");
    assert_eq!(
        m.spec.http.request.headers["Authorization"],
        "Bearer {{secret.EXA_API_KEY}}"
    );

    // An incomplete form still writes TOML; the check names what is missing.
    let partial = model::ManifestForm {
        id: "x".into(),
        ..Default::default()
    };
    let err = Manifest::parse(&partial.to_toml(), Format::Toml).unwrap_err();
    let fields: Vec<&str> = err.0.iter().map(|p| p.field.as_str()).collect();
    assert!(fields.contains(&"display_name"), "{err}");
    assert!(fields.contains(&"request.url"), "{err}");
}

#[test]
fn result_fields_read_templates_and_fall_back_in_order() {
    let text = broken(
        "url = \"$.url\"\ntitle = \"$.title\"\nsnippet = \"$.text\"",
        "url = [\"$.link\", \"https://example.org/u/{{$.handle}}\"]\n\
         title = [\"{{$.name}} (@{{$.handle}})\", \"@{{$.handle}}\"]\n\
         snippet = \"{{$.year}}: {{$.about}}\"",
    );
    let m = Manifest::parse(&text, Format::Toml).unwrap();
    let answer = serde_json::json!({"hits": [
        // The first ways give a value.
        {"link": "https://acme.example/", "name": "Acme", "handle": "acme", "year": 2020, "about": "<b>Rockets</b>"},
        // A blank name and no link: the fallbacks; a handle with a slash
        // stays one path segment.
        {"name": "  ", "handle": "a/b c", "link": "mailto:x@example.org"},
        // No handle at all: no address, no result.
        {"name": "Nobody"},
    ]});
    let page = map_page(&m, &answer);
    let got: Vec<(&str, &str, &str)> = page
        .results
        .iter()
        .map(|r| (r.url.as_str(), r.title.as_str(), r.snippet.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("https://acme.example/", "Acme (@acme)", "2020: Rockets"),
            ("https://example.org/u/a%2Fb%20c", "@a/b c", ""),
        ]
    );
}

#[test]
fn a_result_template_must_read_the_result_and_a_request_may_not() {
    let errors = |text: &str| match Manifest::parse(text, Format::Toml) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    };
    let e = errors(&broken("title = \"$.title\"", "title = \"Untitled\""));
    assert!(
        e.contains("response.title") && e.contains("reads nothing from the result"),
        "{e}"
    );
    let e = errors(&broken(
        "title = \"$.title\"",
        "title = \"{{query}}: {{$.title}}\"",
    ));
    assert!(e.contains("{{query}} does not read the result"), "{e}");
    let e = errors(&broken("title = \"$.title\"", "title = \"{{$.ti[\""));
    assert!(e.contains("response.title"), "{e}");
    let e = errors(&broken(
        "city = \"{{record.city}}\"",
        "city = \"{{$.city}}\"",
    ));
    assert!(
        e.contains("request.query.city") && e.contains("belongs in [response]"),
        "{e}"
    );
    let e = errors(&broken("title = \"$.title\"", "title = []"));
    assert!(e.contains("list 1 to 8 ways"), "{e}");
}

#[test]
fn a_profile_that_does_not_read_still_names_the_requests_mistakes() {
    let text = broken("cost_tier = \"free\"", "cost_tier = \"cheap\"").replace(
        "url = \"https://hn.example.org/api/search\"",
        "url = \"ftp://hn.example.org/\"",
    );
    let err = Manifest::parse(&text, Format::Toml).unwrap_err();
    let fields: Vec<&str> = err.0.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["cost_tier (line 6)", "request.url"], "{err}");
    // The settings the text requires still count: the Authorization
    // header's {{secret.HN_KEY}} is not reported.
    assert!(!err.to_string().contains("HN_KEY"), "{err}");
    // A syntax error is reported once, not once per half.
    let err = Manifest::parse("id = [", Format::Toml).unwrap_err();
    assert_eq!(err.0.len(), 1, "{err}");
    let err = Manifest::parse("{\"id\": ", Format::Json).unwrap_err();
    assert_eq!(err.0.len(), 1, "{err}");
}

#[test]
fn a_manifests_version_is_the_one_it_had_before_profiles_were_shared() {
    // Receipts name a manifest by this digest; reading the profile through
    // the shared declaration must not make an unchanged manifest look new.
    assert_eq!(
        Manifest::parse(GOOD, Format::Toml).unwrap().digest,
        "1626317050ad"
    );
    let builtin = |name: &str| {
        let (_, text) = crate::connectors::builtin::BUILTIN_MANIFESTS
            .iter()
            .find(|(file, _)| *file == name)
            .unwrap();
        Manifest::parse(text, Format::Toml).unwrap().digest
    };
    assert_eq!(builtin("wikipedia.toml"), "87db1d9657a6");
    assert_eq!(builtin("gdelt.toml"), "c3dd1b71051a");
}

#[test]
fn a_key_no_half_knows_is_named_in_either_format() {
    let spec = Manifest::parse(GOOD, Format::Toml).unwrap().spec;
    let mut json = serde_json::to_value(&spec).unwrap();
    let mut top = json.clone();
    top["colour"] = "red".into();
    let err = Manifest::parse(&top.to_string(), Format::Json).unwrap_err();
    assert_eq!(err.0.len(), 1, "{err}");
    assert_eq!(err.0[0].field, "colour");
    assert!(err.0[0].message.contains("not a manifest key"), "{err}");
    // Inside a table, the table says which keys it has.
    json["request"]["colour"] = "blue".into();
    let err = Manifest::parse(&json.to_string(), Format::Json).unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown field `colour`, expected one of `method`"),
        "{err}"
    );
}

#[test]
fn values_in_a_request_address_are_encoded_for_their_place() {
    let record = BTreeMap::new();
    let url = |template: &str, query: &str| render_url(template, query, 5, &record, "Acme");
    // In the path, one segment: no slash, question mark or hash gets out.
    assert_eq!(
        url(
            "https://api.example/users/{{query}}/posts",
            "../../admin?x=1#"
        )
        .unwrap(),
        "https://api.example/users/..%2F..%2Fadmin%3Fx%3D1%23/posts"
    );
    assert_eq!(
        url("https://api.example/p/{{query}}", "Ada Lovelace").unwrap(),
        "https://api.example/p/Ada%20Lovelace"
    );
    // A segment of dots alone would climb: refused.
    for dots in [".", ".."] {
        assert!(matches!(
            url("https://api.example/users/{{query}}", dots),
            Err(RenderError::Unplaceable(_))
        ));
    }
    // After the `?`, a component: no `&` or `=` adds a parameter.
    assert_eq!(
        url(
            "https://api.example/s?q={{query}}&n={{max_results}}",
            "a&key=stolen #x"
        )
        .unwrap(),
        "https://api.example/s?q=a%26key%3Dstolen%20%23x&n=5"
    );
    for filled in [
        url("https://api.example/users/{{query}}", "../../admin?x=1#").unwrap(),
        url("https://api.example/users/{{record.name}}", "").unwrap(),
    ] {
        let parsed = url::Url::parse(&filled).unwrap();
        assert!(parsed.path().starts_with("/users/"), "{filled}");
        assert_eq!(parsed.query(), None, "{filled}");
        assert_eq!(parsed.fragment(), None, "{filled}");
    }
}
