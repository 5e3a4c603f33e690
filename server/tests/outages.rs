//! The database going away and coming back: `/api/ready` says 503 while
//! it is away and 200 once it answers again, requests fail fast with 503
//! and a sentence instead of hanging, nothing stored is lost, and work
//! resumes by itself; open event streams say when it goes and when it is
//! back. PostgreSQL is cut off through a proxy the test
//! controls; a SQLite file is held by another writer.

mod common;

use std::time::Duration;

use common::outage::Outage;
use common::TestServer;

/// `GET path` answered within 15 s (a request that hung for the pool's old
/// 30 s would fail here): its status, `Retry-After` and body.
async fn answered(server: &TestServer, path: &str) -> (u16, Option<String>, serde_json::Value) {
    let res = tokio::time::timeout(
        Duration::from_secs(15),
        server.client.get(server.at(path)).send(),
    )
    .await
    .unwrap_or_else(|_| panic!("{path} hung while the database was away"))
    .unwrap();
    let status = res.status().as_u16();
    let wait = res
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, wait, res.json().await.unwrap_or_default())
}

/// Reads an event stream until it carries `what` (within 10 s).
async fn hears(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<impl AsRef<[u8]>>> + Unpin),
    what: &str,
) {
    use futures::StreamExt;
    let mut said = String::new();
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(chunk) = stream.next().await {
            said.push_str(&String::from_utf8_lossy(chunk.unwrap().as_ref()));
            if said.contains(what) {
                return;
            }
        }
    })
    .await;
    assert!(heard.is_ok() && said.contains(what), "{what} not in {said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_postgresql_is_away_requests_answer_503_and_it_all_comes_back() {
    let Some(db) = engine::store::testing::postgres().await else {
        return;
    };
    let outage = Outage::in_front_of(db.server_addr().unwrap()).await;
    let server = TestServer::start_on(db.through(outage.addr).unwrap()).await;
    let set = server
        .me()
        .import("Kept", "social-profiles", "name\nAcme\nBolt\n")
        .await;
    assert_eq!(answered(&server, "/api/ready").await.0, 200);
    let stream = server.open_events(&format!("record_set={}", set.id)).await;
    assert_eq!(stream.status(), 200);
    let mut stream = stream.bytes_stream();

    outage.cut();
    // An open stream says so within a couple of probes.
    hears(&mut stream, r#""answering":false"#).await;
    let (status, wait, body) = answered(&server, "/api/ready").await;
    assert_eq!((status, wait.as_deref()), (503, Some("5")), "{body}");
    assert_eq!(body["error"], "unavailable", "{body}");
    let (status, _, body) = answered(&server, "/api/record-sets").await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("the database does not answer"),
        "{body}"
    );
    // The process itself is up.
    assert_eq!(answered(&server, "/api/health").await.0, 200);

    outage.restore();
    common::until("ready again", || async {
        answered(&server, "/api/ready").await.0 == 200
    })
    .await;
    hears(&mut stream, r#""answering":true"#).await;
    assert_eq!(
        server.me().record_ids(set.id).await.len(),
        2,
        "nothing lost"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_another_writer_holds_a_sqlite_file_writes_answer_503_then_succeed() {
    use sqlx::Connection;
    let db = engine::store::testing::sqlite();
    let url = db.url.clone();
    let server = TestServer::start_on(db).await;
    server
        .me()
        .import("First", "social-profiles", "name\nAcme\n")
        .await;

    // Another process takes the file's write lock and keeps it.
    let mut holder = sqlx::AnyConnection::connect(&url).await.unwrap();
    sqlx::query("BEGIN EXCLUSIVE")
        .execute(&mut holder)
        .await
        .unwrap();
    let refused = server
        .me()
        .import_refused("Second", "social-profiles", "name\nBolt\n")
        .await;
    assert_eq!(
        (refused.status, refused.error.as_str()),
        (503, "unavailable"),
        "{refused:?}"
    );
    // Reading still works: the file is only busy for writers.
    assert_eq!(answered(&server, "/api/ready").await.0, 200);

    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    holder.close().await.unwrap();
    let second = server
        .me()
        .import("Second", "social-profiles", "name\nBolt\n")
        .await;
    assert_eq!(second.imported, 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_process_ends_its_event_streams_with_a_hint_to_reconnect() {
    use futures::StreamExt;
    let server = TestServer::start().await;
    let stream = server.open_events("").await;
    assert_eq!(stream.status(), 200);
    let mut body = stream.bytes_stream();
    let stopped = tokio::spawn(server.stop());
    // The stream ends (it would otherwise stay open for ever and hold the
    // stop), its last words telling the browser to come back soon.
    let mut said = String::new();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = body.next().await {
            said.push_str(&String::from_utf8_lossy(chunk.unwrap().as_ref()));
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream stayed open: {said}");
    assert!(said.contains("retry: 500"), "{said}");
    assert!(
        said.contains(": this server is stopping; reconnect"),
        "{said}"
    );
    tokio::time::timeout(Duration::from_secs(5), stopped)
        .await
        .expect("the server stops once its streams ended")
        .unwrap();
}
