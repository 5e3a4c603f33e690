//! `switchyard`: the command line entry point.

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;

use server::cli::{Cli, Command};
use server::{serve, shutdown_signal, startup, Config};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A missing .env is normal; a broken one is worth saying.
    if let Err(e) = dotenvy::dotenv() {
        if !e.not_found() {
            eprintln!("warning: .env was not read: {e}");
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();

    let cli = Cli::parse();
    match &cli.command {
        None | Some(Command::Serve(_)) => run_serve(Config::from(cli.serve_args())).await,
    }
}

async fn run_serve(config: Config) -> anyhow::Result<()> {
    let state = startup::prepare(&config).await?;
    startup::register_connectors(&config, &state)?;
    startup::finish(&config, &state).await?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    let local = listener.local_addr()?;
    tracing::info!(addr = %local, "Switchyard is serving.");
    println!("Switchyard is serving on http://{local}/");
    serve(listener, state, shutdown_signal()).await?;
    Ok(())
}
