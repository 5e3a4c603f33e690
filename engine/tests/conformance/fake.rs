//! The fake provider on 127.0.0.1: it answers each request with the
//! first canned answer whose word its URI contains, and keeps what it saw.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

/// One canned answer of the fake provider.
#[derive(Clone)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
    pub(crate) delay: Duration,
}

impl Answer {
    pub(crate) fn json(status: u16, body: &str) -> Self {
        Self::typed(status, "application/json", body)
    }

    pub(crate) fn typed(status: u16, content_type: &str, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type", content_type.to_owned())],
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }
}

/// What the fake saw of one request.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) uri: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

#[derive(Clone, Default)]
pub(crate) struct Fake {
    /// Answers keyed by a word the request URI must contain ("" matches all).
    pub(crate) answers: Arc<Mutex<Vec<(&'static str, Answer)>>>,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
}

pub(crate) async fn respond(State(fake): State<Fake>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body: Bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let uri = parts.uri.to_string();
    fake.seen.lock().unwrap().push(Seen {
        uri: uri.clone(),
        headers: parts.headers.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let answer = fake
        .answers
        .lock()
        .unwrap()
        .iter()
        .find(|(word, _)| uri.contains(word))
        .map(|(_, a)| a.clone());
    let Some(answer) = answer else {
        return (StatusCode::NOT_IMPLEMENTED, "no canned answer").into_response();
    };
    tokio::time::sleep(answer.delay).await;
    let mut response = (StatusCode::from_u16(answer.status).unwrap(), answer.body).into_response();
    for (k, v) in answer.headers {
        response.headers_mut().insert(k, v.parse().unwrap());
    }
    response
}

pub(crate) async fn start_fake() -> (String, Fake) {
    let fake = Fake::default();
    let app = axum::Router::new()
        .fallback(respond)
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, fake)
}

pub(crate) fn all_json(list: &[(&'static str, &'static str)]) -> Vec<(&'static str, Answer)> {
    all_ok(list, "application/json")
}

/// Each body with status 200 in `content_type`.
pub(crate) fn all_ok(
    list: &[(&'static str, &'static str)],
    content_type: &str,
) -> Vec<(&'static str, Answer)> {
    list.iter()
        .map(|(w, b)| (*w, Answer::typed(200, content_type, b)))
        .collect()
}

pub(crate) fn every(answer: Answer) -> Vec<(&'static str, Answer)> {
    vec![("", answer)]
}
