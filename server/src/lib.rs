//! The `switchyard` server: configuration, the axum router that joins the Leptos
//! app, the REST door and static files, and the serve loop with graceful
//! shutdown. `main.rs` is only the command line on top of this.

pub mod api;
pub mod auth;
pub mod body_limit;
pub mod cli;
pub mod config;
pub mod csrf;
pub mod delivery;
pub mod mcp;
pub mod metrics;
pub mod operator;
pub mod remote;
pub mod router;
pub mod serving;
pub mod site;
pub mod startup;

use std::future::Future;

use tokio::net::TcpListener;

pub use config::Config;
pub use router::{app, AppState};

/// How long a stopping process waits for its connections to close before
/// it stops anyway.
pub const DRAIN_AT_MOST: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves `state` on `listener` until `shutdown` resolves; then takes no
/// new connection, ends the open event streams with a hint to reconnect,
/// and lets the requests in flight finish, for at most [`DRAIN_AT_MOST`].
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let stopping = state.stopping.clone();
    let started_stopping = stopping.clone();
    tokio::spawn(async move {
        shutdown.await;
        started_stopping.cancel();
    });
    let serving = serving::serve_http1(listener, app(state), stopping.clone());
    let drained_or_not = async {
        stopping.cancelled().await;
        tokio::time::sleep(DRAIN_AT_MOST).await;
    };
    tokio::select! {
        () = serving => {}
        () = drained_or_not => {
            tracing::warn!(after = ?DRAIN_AT_MOST, "Connections were still open; stopping anyway.");
        }
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "Cannot listen for Ctrl-C.");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "Cannot listen for SIGTERM.");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("Shutdown requested; finishing requests in flight.");
}
