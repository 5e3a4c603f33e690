//! The accept loop: each connection served as HTTP/1.1 by hyper, with the
//! peer's address for the sign-in limits, a 30 s limit on reading a
//! request's head, and a graceful end.
//!
//! `axum::serve` is not used: its builder sniffs each connection for
//! HTTP/2 first, which doubles the connection's read buffer to 16 KiB, and
//! an open event stream keeps that buffer for as long as it is open (a
//! thousand viewers held 16 MB of them). Browsers speak HTTP/2 only over
//! TLS, which a proxy in front ends, so nothing here needs it.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long a connection may take to send a request's head.
const HEAD_READ_AT_MOST: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `stop` is cancelled, then takes no
/// new connection and resolves once every open one has finished its
/// request in flight (an idle one closes at once).
pub async fn serve_http1(listener: TcpListener, router: Router, stop: CancellationToken) {
    let connections = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before
                    // it was taken: wait a little rather than spin.
                    tracing::warn!(error = %e, "Cannot accept a connection.");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "Cannot set TCP_NODELAY.");
        }
        connections.spawn(connection(stream, peer, router.clone(), stop.clone()));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// One connection, until it closes or the process stops.
fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    stop: CancellationToken,
) -> impl Future<Output = ()> {
    let service = router.map_request(move |mut req: axum::http::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        req
    });
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_READ_AT_MOST);
    let served = http1.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    async move {
        let mut served = std::pin::pin!(served);
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "A connection ended with an error.");
                }
                return;
            }
            () = stop.cancelled() => served.as_mut().graceful_shutdown(),
        }
        if let Err(e) = served.await {
            tracing::debug!(error = %e, "A connection ended with an error.");
        }
    }
}
