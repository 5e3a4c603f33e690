//! Start-up: from a [`Config`] to a ready [`AppState`]: database, catalogue,
//! engine, demo data, recovery of what a previous run left unfinished.

use anyhow::Context;
use engine::packs::Catalog;
use engine::store::{redact_url, Store};
use engine::{Engine, EngineConfig};

use crate::{AppState, Config};

/// Connects, migrates and builds the engine, without registering connectors
/// or recovering jobs: tests register their own connectors before [`finish`].
pub async fn prepare(config: &Config) -> anyhow::Result<AppState> {
    let store = Store::connect(&config.database_url)
        .await
        .with_context(|| {
            format!(
                "cannot open the database {}",
                redact_url(&config.database_url)
            )
        })?;
    let catalog = match &config.packs_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the packs file {}", path.display()))?;
            Catalog::from_toml(&text).with_context(|| format!("packs file {}", path.display()))?
        }
        None => Catalog::builtin(),
    };
    let mut catalog = catalog;
    if config.demo {
        catalog.append_to_every_chain(engine::connectors::builtin::demo::ID);
    }
    let engine = Engine::new(
        store,
        catalog,
        None,
        EngineConfig {
            secrets: config.secrets.clone(),
            fetch_allow: config.fetch_allow.clone(),
            leases: config.leases,
            calls: config.calls,
            page_rechecks: config.page_rechecks,
            sign_in: engine::tenancy::sign_in_limits::SignInQuota::default(),
            flow: engine::execution::flow::FlowConfig {
                max_inflight: config.max_inflight,
                ..engine::execution::flow::FlowConfig::default()
            },
            dispatch: engine::execution::dispatch::DispatchConfig {
                workspace_daily_share: config.workspace_daily_share,
                ..engine::execution::dispatch::DispatchConfig::default()
            },
        },
    );
    let access = crate::auth::AccessWatch::start(engine.clone());
    Ok(AppState {
        leptos_options: config.leptos_options(),
        engine,
        trusted_proxies: config.trusted_proxies.clone(),
        token_rate: crate::auth::TokenRate::new(config.token_requests_per_second),
        secure_cookies: config.secure_cookies,
        streams: engine::ops::Slots::default(),
        access,
        event_json: crate::api::EventJson::default(),
        stopping: tokio_util::sync::CancellationToken::new(),
    })
}

/// Registers the coded adapters (and the demo connector in demo mode), then
/// every manifest in the drop folder, and watches the folder. Keep the
/// returned guard for as long as the folder should be watched.
pub fn register_connectors(
    config: &Config,
    state: &AppState,
) -> anyhow::Result<Option<engine::connectors::manifest::folder::Watching>> {
    let demo = config.demo.then_some(config.demo_latency);
    state
        .engine
        .register_builtin(demo)
        .context("registering the built-in connectors")?;
    let watching = match state.engine.open_drop_folder(&config.connectors_dir) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(dir = %config.connectors_dir.display(), error = %e, "Cannot watch the connectors folder; changes apply on restart.");
            None
        }
    };
    Ok(watching)
}

/// Registers the manifests workspaces saved (after the built-ins and the
/// drop folder, which keep their ids).
async fn register_saved_manifests(state: &AppState) -> anyhow::Result<()> {
    let n = state
        .engine
        .adopt_saved_manifests()
        .await
        .context("registering the workspaces' saved manifests")?;
    if n > 0 {
        tracing::info!(
            connectors = n,
            "Registered the workspaces' saved manifests."
        );
    }
    Ok(())
}

/// The admin made on first run, to be shown once.
#[derive(Debug)]
pub struct FirstAdmin {
    pub workspace: String,
    pub email: String,
    pub password: String,
}

/// The workspace made on first run and holding the demo data.
pub fn first_workspace(config: &Config) -> &'static str {
    if config.demo {
        "demo"
    } else {
        "main"
    }
}

/// Creates the first admin when nobody has an account, loads demo data when
/// asked, registers the workspaces' saved manifests and resumes unfinished
/// work. Call after the connectors are
/// registered. Returns the first admin's credentials when it made them.
pub async fn finish(config: &Config, state: &AppState) -> anyhow::Result<Option<FirstAdmin>> {
    let engine = &state.engine;
    let workspace = first_workspace(config);
    let first = engine
        .bootstrap(&config.first_admin, workspace)
        .await
        .context("creating the first admin")?;
    let first = first.map(|(_, password, adopted)| {
        if adopted > 0 {
            tracing::info!(
                record_sets = adopted,
                workspace,
                "Record sets from before accounts now belong to the first workspace."
            );
        }
        FirstAdmin {
            workspace: workspace.to_owned(),
            email: config.first_admin.trim().to_lowercase(),
            password,
        }
    });
    if config.demo {
        if let Some(id) = engine.load_demo().await? {
            tracing::info!(record_set = id, "Loaded the demo record set.");
        }
    }
    register_saved_manifests(state).await?;
    // Switches, rate limits, refusals and suspensions from before this start
    // (or from the other processes) hold.
    engine
        .adopt_stored_health()
        .await
        .context("reading connector health")?;
    // Serve only once this process hears the other processes' events.
    engine.listening().await;
    engine
        .recover()
        .await
        .context("recovering unfinished work")?;
    spawn_session_sweeper(engine.sessions());
    Ok(first)
}

/// Forgets expired sessions at start and every hour after.
fn spawn_session_sweeper(sessions: engine::tenancy::credentials::Sessions) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            every.tick().await;
            match sessions.delete_expired().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(sessions = n, "Forgot expired sessions."),
                Err(e) => tracing::warn!(error = %e, "Cannot forget expired sessions."),
            }
        }
    });
}
