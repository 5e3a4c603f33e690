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
pub mod site;
pub mod startup;

use std::future::Future;

use tokio::net::TcpListener;

pub use config::Config;
pub use router::{app, AppState};

/// Serves `state` on `listener` until `shutdown` resolves, then lets the
/// requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The peer address feeds the per-address sign-in limit.
    axum::serve(
        listener,
        app(state).into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
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
