//! Big sets at a glance through the REST door, on SQLite and PostgreSQL:
//! one line per record with its chips and its best candidate, and the
//! set's facets, both following decisions, and neither across workspaces.

mod common;

use common::{on_every_backend, TestServer};
use engine::connectors::scripted::{ScriptedConnector, Step};
use engine::connectors::seam::ConnectorResult;
use model::{BuiltinCapability as B, CompactPage, CostTier, Role, SetFacets, TriageVerb};
use serde_json::Value;

/// `alpha` finds one item, one, one, then two; `beta` finds the first of
/// Dune's two again.
async fn server(db: engine::store::testing::TestDatabase) -> TestServer {
    let web = [B::SearchWeb.into()];
    let steps = [
        Step::Found(1),
        Step::Found(1),
        Step::Found(1),
        Step::Found(2),
    ];
    let beta = [Step::Results(vec![ConnectorResult {
        url: "https://alpha.test/dune-nice/0".into(),
        title: "Dune Nice result 0".into(),
        snippet: "found by beta too".into(),
        raw: Value::Null,
    }])];
    let free = |id| ScriptedConnector::registration(id, CostTier::Free, &web);
    let connectors = vec![
        (free("alpha"), ScriptedConnector::new("alpha", steps)),
        (free("beta"), ScriptedConnector::new("beta", beta)),
    ];
    TestServer::with_scripted(db, connectors).await
}

async fn lines(server: &TestServer, set: i64, query: &str) -> CompactPage {
    let (code, body) = server
        .get_json(&format!("/api/record-sets/{set}/lines?{query}"))
        .await;
    assert_eq!(code, 200, "{body}");
    serde_json::from_value(body).unwrap()
}

async fn facets(server: &TestServer, set: i64) -> SetFacets {
    let (code, body) = server
        .get_json(&format!("/api/record-sets/{set}/facets"))
        .await;
    assert_eq!(code, 200, "{body}");
    serde_json::from_value(body).unwrap()
}

/// `(connector, items, untriaged, single)` of every connector facet.
fn by_connector(facets: &SetFacets) -> Vec<(&str, i64, i64, i64)> {
    facets
        .connectors
        .iter()
        .map(|c| (c.connector_id.as_str(), c.items, c.untriaged, c.single))
        .collect()
}

#[tokio::test]
async fn lines_show_each_records_best_candidate_and_facets_count_what_is_left() {
    on_every_backend(|db| async {
        let server = server(db).await;
        let me = server.me();
        let csv = "name,city\nAcme,Lyon\nBolt,Oslo\nCore,Rome\nDune,Nice\n";
        let set = me.import("Companies", "test", csv).await.id;
        let ids = me.record_ids(set).await;
        for id in &ids {
            me.fire(*id, "web", Some("alpha")).await;
        }
        me.fire(ids[3], "web", Some("beta")).await;

        let all = lines(&server, set, "").await;
        assert_eq!(all.total, 4);
        let names: Vec<&str> = all.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["Acme", "Bolt", "Core", "Dune"]);
        // Dune's best candidate is the one both connectors found.
        let dune = &all.lines[3];
        let best = dune.best.as_ref().expect("Dune has a candidate");
        assert_eq!(best.url, "https://alpha.test/dune-nice/0");
        assert_eq!(best.connectors, 2);
        assert_eq!(dune.untriaged, 2);
        assert!(
            dune.chips.iter().any(|c| c.name() == "found"),
            "{:?}",
            dune.chips
        );
        // A stretch, and a search, as the cards page them.
        let stretch = lines(&server, set, "offset=2&limit=1").await;
        assert_eq!((stretch.offset, stretch.total), (2, 4));
        assert_eq!(stretch.lines[0].name, "Core");
        assert_eq!(lines(&server, set, "search=dun").await.total, 1);

        let before = facets(&server, set).await;
        assert_eq!(before.records, 4);
        assert_eq!(
            by_connector(&before),
            [("alpha", 5, 5, 3), ("beta", 1, 1, 1)]
        );
        assert_eq!((before.items_untriaged, before.items_triaged), (5, 0));
        let unreviewed = before
            .filters
            .iter()
            .find(|f| f.filter == model::RecordFilter::Unreviewed)
            .unwrap();
        assert_eq!(unreviewed.records, 4);
        let web = before.packs.iter().find(|p| p.pack_id == "web").unwrap();
        assert_eq!(web.states, [("found".to_owned(), 4)]);
        // Every pack's counts are those of the chips a page shows.
        let (_, page) = server
            .get_json(&format!("/api/record-sets/{set}/records?limit=100"))
            .await;
        let page: model::RecordsPage = serde_json::from_value(page).unwrap();
        for facet in &before.packs {
            let states: Vec<model::ChipState> = page
                .records
                .iter()
                .flat_map(|r| r.chips.iter().filter(|c| c.pack_id == facet.pack_id))
                .map(|c| c.state.clone())
                .collect();
            assert_eq!(
                facet.states,
                model::glance::count_states(&states),
                "{}",
                facet.pack_id
            );
        }

        // Accepting Acme's item: its line and the facets follow.
        let acme = me.items(ids[0]).await.remove(0);
        me.triage(acme.id, TriageVerb::AcceptCanonical, acme.version)
            .await;
        let after = facets(&server, set).await;
        assert_eq!(
            by_connector(&after),
            [("alpha", 5, 4, 2), ("beta", 1, 1, 1)]
        );
        assert_eq!((after.items_untriaged, after.items_triaged), (4, 1));
        let acme_line = &lines(&server, set, "limit=1").await.lines[0];
        assert_eq!(
            acme_line.best.as_ref().map(|b| b.state),
            Some(model::TriageState::AcceptedCanonical)
        );
        assert_eq!(acme_line.untriaged, 0);

        // Bad stretches are named; another workspace sees nothing.
        let (code, body) = server
            .get_json(&format!("/api/record-sets/{set}/lines?limit=0"))
            .await;
        assert_eq!(code, 400, "{body}");
        let eve = server
            .user("eve@example.org", "elsewhere", Role::Admin)
            .await;
        for path in ["lines", "facets"] {
            let res = eve
                .get(server.at(&format!("/api/record-sets/{set}/{path}")))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 404, "{path}");
        }
        server.stop().await;
    })
    .await;
}
