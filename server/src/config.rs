//! Everything `serve` needs to start, resolved from flags, environment and
//! defaults in one place.

use std::net::SocketAddr;
use std::path::PathBuf;

use leptos::config::LeptosOptions;

/// The default database: a SQLite file under `./data/`, created on first run.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/switchyard.db";
/// Where `make build` puts the wasm, JavaScript, CSS and public files.
pub const DEFAULT_SITE_ROOT: &str = "target/site";
/// The name of the wasm, JavaScript and CSS files under `<site root>/pkg`
/// when the build did not give them a hashed one.
pub const OUTPUT_NAME: &str = "switchyard";

/// Resolved settings for one `serve`.
#[derive(Clone, Debug)]
pub struct Config {
    pub addr: SocketAddr,
    pub database_url: String,
    pub site_root: String,
    pub demo: bool,
    /// The longest the demo connector takes to answer.
    pub demo_latency: std::time::Duration,
    /// A packs-and-bundles TOML file replacing the shipped catalogue.
    pub packs_file: Option<PathBuf>,
    /// Mark the session cookie Secure (the public address is https).
    pub secure_cookies: bool,
    /// The admin created on first run, when no account exists yet.
    pub first_admin: String,
    /// The drop folder of manifest connectors.
    pub connectors_dir: PathBuf,
    /// Internal hosts and networks manifest connectors may reach
    /// (`SWITCHYARD_FETCH_ALLOW`); everything internal is refused otherwise.
    pub fetch_allow: engine::connectors::guard::AllowList,
    /// Seals workspace secrets (from `SWITCHYARD_SECRETS_KEY`, read by
    /// `serve` at start); `None`: admins cannot set secrets.
    pub secrets: Option<engine::tenancy::secrets::Sealer>,
    /// How long running work's leases last and how often they are renewed.
    pub leases: engine::execution::lease::LeaseConfig,
    /// The most fan-out fires in flight in this process.
    pub max_inflight: usize,
    /// The most of a server key's daily cap one workspace may take (a
    /// share, above 0, at most 1).
    pub workspace_daily_share: f64,
    /// The sustained requests a second one API token may send.
    pub token_requests_per_second: std::num::NonZeroU32,
    /// The reverse proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: crate::auth::TrustedProxies,
    /// How long a capability call is awaited in its request and keeps its
    /// results.
    pub calls: engine::ops::CallConfig,
    /// Whether pages a connector stops returning are asked for themselves.
    pub page_rechecks: engine::execution::gone_pages::PageRechecks,
}

impl Config {
    /// The options the Leptos integration reads: where the site files are and
    /// what they are called.
    pub fn leptos_options(&self) -> LeptosOptions {
        let name = crate::delivery::output_name(&self.site_root);
        LeptosOptions::builder()
            .output_name(name.as_str())
            .site_root(self.site_root.as_str())
            .site_pkg_dir(crate::delivery::PKG_PATH.trim_start_matches('/'))
            .site_addr(self.addr)
            .build()
    }
}
