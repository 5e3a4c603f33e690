//! `switchyard`: the command line entry point.

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;

use server::cli::{Cli, Command};
use server::{operator, serve, shutdown_signal, startup, Config};

/// glibc's allocator raises its mmap threshold to the largest block freed,
/// so once argon2 has freed its 19 MiB, every later hash comes from a heap
/// arena that is never given back: the load test's 200 sign-ins left the
/// server at 700 MiB to 2.8 GB resident. A fixed threshold keeps blocks of
/// 1 MiB and more in their own mappings, returned to the system when freed
/// (it held at 36 MiB).
///
/// Fixing it also fixes the trim threshold at its 128 KiB default: each
/// compressed answer's encoder (a few hundred KiB) was given back to the
/// system when freed and faulted in page by page for the next answer, which
/// made compressing a 4 KB answer cost 520 us and a 66 KB one 1.6 ms (brotli;
/// `cargo bench -p server --bench compression` with the same settings). An
/// arena keeps up to 4 MiB free at its top instead: 76 us and 615 us.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_the_allocator() {
    // SAFETY: mallopt only sets a parameter of the C allocator, under its
    // own lock; it touches no memory of ours.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 4 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_the_allocator() {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tune_the_allocator();
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
    let config = Config::try_from(cli.serve_args()).map_err(anyhow::Error::msg)?;
    let mut stdout = std::io::stdout();
    match cli.command {
        None | Some(Command::Serve(_)) => {
            let mut config = config;
            config.site_root = server::site::locate(cli.serve_args().site_root.as_deref())
                .map_err(anyhow::Error::msg)?;
            run_serve(config).await
        }
        Some(Command::User(command)) => operator::user(command, &mut stdout).await,
        Some(Command::Token(command)) => operator::token(command, &mut stdout).await,
        Some(Command::Connector(command)) => operator::connector(command, &mut stdout).await,
        Some(Command::Backup(args)) => operator::backup(args, &mut stdout).await,
        Some(Command::Remote(command)) => {
            let exit = server::remote::run(command, &mut stdout).await;
            std::process::exit(exit as i32)
        }
    }
}

async fn run_serve(mut config: Config) -> anyhow::Result<()> {
    config.secrets = engine::tenancy::secrets::Sealer::from_env()?;
    if config.secrets.is_none() {
        tracing::info!(
            "Workspace secrets are off: set {} to let admins store API keys.",
            engine::tenancy::secrets::KEY_VAR
        );
    }
    let state = startup::prepare(&config).await?;
    let _watching = startup::register_connectors(&config, &state)?;
    if let Some(first) = startup::finish(&config, &state).await? {
        // The one place the first admin's password appears: this console.
        println!(
            "First run: created workspace {:?} and its admin {}.",
            first.workspace, first.email
        );
        println!("Sign in with this password (shown once; keep it safe):");
        println!("{}", first.password);
    }
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    let local = listener.local_addr()?;
    tracing::info!(addr = %local, "Switchyard is serving.");
    println!("Switchyard is serving on http://{local}/");
    serve(listener, state.clone(), shutdown_signal()).await;
    // Fires in flight get a moment to end; what is left is handed over at
    // once instead of when its leases expire.
    tracing::info!("Stopping: letting fires in flight end, then handing the rest over.");
    state
        .engine
        .hand_over(std::time::Duration::from_secs(10))
        .await
        .context("handing running work over")?;
    Ok(())
}
