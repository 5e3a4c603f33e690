//! The command line of the `switchyard` binary.

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand};

use crate::config::{Config, DEFAULT_DATABASE_URL, DEFAULT_SITE_ROOT};

#[derive(Debug, Parser)]
#[command(
    name = "switchyard",
    version,
    about = "Enrich and triage lists of entities, one chip at a time."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of `serve`, the default command.
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the web app and the API (the default).
    Serve(ServeArgs),
    /// Manage users (works while the server runs, on the same database).
    #[command(subcommand)]
    User(UserCommand),
    /// Manage API tokens (works while the server runs, on the same database).
    #[command(subcommand)]
    Token(TokenCommand),
    /// Connector health for the whole deployment (works while the servers
    /// run: they follow within a second).
    #[command(subcommand)]
    Connector(ConnectorCommand),
    /// A consistent copy of the database, taken while the servers run
    /// (SQLite; for PostgreSQL it says how to use pg_dump).
    Backup(BackupArgs),
    #[command(flatten)]
    Remote(RemoteCommand),
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The new file to write the copy to (never overwritten).
    #[arg(long)]
    pub to: std::path::PathBuf,
    #[command(flatten)]
    pub db: DatabaseArgs,
}

/// Commands that talk to a running server with an API token.
#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// Call a verb, e.g. `switchyard call search.news "Ada Lovelace"`,
    /// `switchyard call web.discover "Ada Lovelace" --max-results 5`,
    /// `switchyard call web.scrape https://a.example/ https://b.example/` or
    /// `switchyard call maps.search pizza --near Berlin`;
    /// waits for a slow call unless `--async`.
    Call(CallArgs),
    /// The verbs `call` takes in the token's workspace, or one verb's
    /// input and output fields (read from the server's registry, whose
    /// schemas are made from the types the server parses).
    Verbs(VerbsArgs),
    /// Fire a pack for one record, as a click on its chip does.
    Fire(FireArgs),
    /// Fire packs over every record of a set, as a job.
    Fanout(FanoutArgs),
    /// The connectors of the token's workspace, with their status.
    Connectors(RemoteArgs),
    /// A record set with its accepted items, as CSV or JSON.
    Export(ExportArgs),
}

/// Where the server is and who is asking.
#[derive(Clone, Debug, Args)]
#[command(after_help = "Exit codes: 0 done; 1 the work failed; 2 bad input; \
3 no or refused token, or not allowed; 4 not found; 5 conflict; 6 a cap or \
rate limit; 7 the server failed or cannot be reached; 8 a record's daily cap \
asks before spending more (run again with --spend-more); 9 some pages of a \
web.scrape could not be read (the others were).")]
pub struct RemoteArgs {
    /// The server's address.
    #[arg(long, env = "SWITCHYARD_URL", default_value = "http://127.0.0.1:3000")]
    pub url: String,
    /// An API token (`switchyard token create`).
    #[arg(long, env = "SWITCHYARD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the server's JSON instead of text for people.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Debug, Args)]
pub struct CallArgs {
    /// The verb: a capability such as search.news, or web.discover or
    /// web.scrape.
    pub capability: String,
    /// What to look for (its words are joined); for web.scrape, the
    /// addresses to read (1 to 20); for maps.place and maps.reviews, a
    /// place's id.
    #[arg(required = true, num_args = 1..)]
    pub query: Vec<String>,
    /// For maps.search: where the places should be (a town, an address).
    #[arg(long)]
    pub near: Option<String>,
    /// At most this many results (1 to 50; web.discover's top_k).
    #[arg(long)]
    pub max_results: Option<u32>,
    /// Fire exactly this connector.
    #[arg(long)]
    pub connector: Option<String>,
    /// Do not wait: print the call's id at once.
    #[arg(long = "async")]
    pub run_async: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

#[derive(Clone, Debug, Args)]
pub struct VerbsArgs {
    /// One verb to describe, e.g. maps.search.
    pub verb: Option<String>,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

#[derive(Clone, Debug, Args)]
pub struct FireArgs {
    #[arg(long)]
    pub record: i64,
    #[arg(long)]
    pub pack: String,
    /// Fire exactly this connector (the chip menu's "fire through").
    #[arg(long)]
    pub connector: Option<String>,
    /// Spend past the record's daily cap this time (exit code 8 asked).
    #[arg(long)]
    pub spend_more: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

#[derive(Clone, Debug, Args)]
pub struct FanoutArgs {
    /// The record set.
    #[arg(long)]
    pub set: i64,
    /// A pack to run (repeat for more); the set's whole bundle when absent.
    #[arg(long)]
    pub pack: Vec<String>,
    /// Wait for the job to end, with a progress bar.
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

#[derive(Clone, Debug, Args)]
pub struct ExportArgs {
    /// The record set.
    #[arg(long)]
    pub set: i64,
    /// csv or json.
    #[arg(long, default_value = "csv")]
    pub format: String,
    /// Write to this file instead of standard output.
    #[arg(long)]
    pub output: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

#[derive(Debug, Subcommand)]
pub enum ConnectorCommand {
    /// Clear what the server's key met (auth-failed, a rate limit, a
    /// suspension, a switch): the connector is available again for every
    /// workspace that uses the server's key.
    Clear {
        /// The connector's id, as the inventory shows it.
        #[arg(long)]
        id: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

/// The database an operator command works on.
#[derive(Clone, Debug, Args)]
pub struct DatabaseArgs {
    /// Database: `sqlite://path` or `postgres://...`, as for `serve`.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, hide_env_values = true)]
    pub database_url: String,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user to a workspace with a role, creating either when missing.
    /// The password is read from standard input when it is not a terminal;
    /// otherwise a user without a password gets a one-time link to choose
    /// one, printed once.
    Add {
        #[arg(long)]
        email: String,
        #[arg(long)]
        workspace: String,
        #[arg(long, value_parser = parse_role)]
        role: model::Role,
        /// The address people reach the site at, to print the whole link.
        #[arg(long, env = "SWITCHYARD_PUBLIC_URL")]
        public_url: Option<String>,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Print a one-time link (valid 7 days) for a user to choose a new
    /// password with, for a forgotten one: the current password works until
    /// the link is used.
    Link {
        #[arg(long)]
        email: String,
        /// The address people reach the site at, to print the whole link.
        #[arg(long, env = "SWITCHYARD_PUBLIC_URL")]
        public_url: Option<String>,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Take a user out of a workspace: their sessions and tokens there stop
    /// at once. The last admin of a workspace stays.
    Remove {
        #[arg(long)]
        email: String,
        #[arg(long)]
        workspace: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Issue an API token acting as a user in one workspace. The token is the
    /// last line of standard output, shown once; only its hash is kept.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long)]
        workspace: String,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Revoke a token by its id, or by its value read from standard input.
    Revoke {
        /// The id `token create` and `token list` show.
        #[arg(long, conflicts_with = "stdin", required_unless_present = "stdin")]
        id: Option<i64>,
        /// Read the token value from standard input instead.
        #[arg(long)]
        stdin: bool,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List tokens (never their values), optionally of one user.
    List {
        #[arg(long)]
        email: Option<String>,
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

fn parse_role(s: &str) -> Result<model::Role, String> {
    s.parse()
}

#[derive(Clone, Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "SWITCHYARD_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,
    /// Database: `sqlite://path` (created when missing) or `postgres://...`.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, hide_env_values = true)]
    pub database_url: String,
    /// Folder holding the built site (`pkg/` with the wasm, JavaScript and
    /// CSS). By default `site/` beside the executable, then `../site` from
    /// it (the build tree), then `target/site` here.
    #[arg(long, env = "LEPTOS_SITE_ROOT")]
    pub site_root: Option<String>,
    /// Load the demo record set (plainly labelled demo data).
    #[arg(long, env = "SWITCHYARD_DEMO")]
    pub demo: bool,
    /// The longest the demo connector takes to answer, in milliseconds (it
    /// varies between a third of this and all of it).
    #[arg(long, env = "SWITCHYARD_DEMO_LATENCY_MS", default_value_t = 900)]
    pub demo_latency_ms: u64,
    /// A packs-and-bundles TOML file replacing the shipped catalogue.
    #[arg(long, env = "SWITCHYARD_PACKS")]
    pub packs: Option<std::path::PathBuf>,
    /// The address people reach the site at; an `https://` one marks the
    /// session cookie Secure.
    #[arg(long, env = "SWITCHYARD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// The drop folder of manifest connectors, watched while serving.
    #[arg(long, env = "SWITCHYARD_CONNECTORS", default_value = "connectors")]
    pub connectors: std::path::PathBuf,
    /// The admin created on first run (when no account exists yet).
    #[arg(
        long,
        env = "SWITCHYARD_FIRST_ADMIN",
        default_value = "admin@switchyard.local"
    )]
    pub first_admin: String,
    /// How long a running fire's, task's or job's lease lasts without
    /// renewal, in seconds: work of a process that stopped is taken over
    /// this long after its last heartbeat.
    #[arg(long, env = "SWITCHYARD_LEASE_SECONDS", default_value_t = 30.0)]
    pub lease_seconds: f64,
    /// How often this process renews its leases and looks for expired ones,
    /// in seconds (at most half the lease).
    #[arg(long, env = "SWITCHYARD_HEARTBEAT_SECONDS", default_value_t = 10.0)]
    pub heartbeat_seconds: f64,
    /// The most fan-out fires this process has in flight, over all jobs and
    /// connectors (each connector's own window is smaller: its rate hint
    /// times its latency).
    #[arg(long, env = "SWITCHYARD_MAX_INFLIGHT", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_inflight: u32,
    /// The most of a connector's daily cap on the server's key
    /// (`rate_hints.daily_cap`) one workspace may take, in percent: with
    /// 25, four workspaces at most share out the operator's day.
    #[arg(long, env = "SWITCHYARD_WORKSPACE_DAILY_SHARE", default_value_t = 100, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub workspace_daily_share: u8,
    /// The requests a second one API token may send, sustained (bursts of
    /// twice that); past it, 429 before the token is even looked up.
    #[arg(long, env = "SWITCHYARD_TOKEN_REQUESTS_PER_SECOND", default_value_t = crate::auth::DEFAULT_TOKEN_REQUESTS_PER_SECOND, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub token_requests_per_second: u32,
    /// Reverse proxies in front of the server, as addresses or CIDR ranges
    /// separated by commas: only their `X-Forwarded-For` is believed when
    /// sign-in attempts are counted per client address.
    #[arg(long, env = "SWITCHYARD_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,
    /// Whether a page a connector stops returning is asked for itself (a
    /// GET through the outbound guard, at most once an hour) to mark it gone
    /// on 404 or 410. `off` keeps Switchyard from contacting found pages'
    /// sites; nothing is then marked gone.
    #[arg(long, env = "SWITCHYARD_RECHECK_PAGES", default_value = "on", value_parser = ["on", "off"])]
    pub recheck_pages: String,
}

impl Cli {
    /// The serve settings, whether `serve` was named or not.
    pub fn serve_args(&self) -> &ServeArgs {
        match &self.command {
            Some(Command::Serve(args)) => args,
            _ => &self.serve,
        }
    }
}

impl TryFrom<&ServeArgs> for Config {
    type Error = String;

    fn try_from(args: &ServeArgs) -> Result<Self, String> {
        let seconds = |name: &str, value: f64| {
            std::time::Duration::try_from_secs_f64(value)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| format!("--{name}: give a number of seconds above zero"))
        };
        let leases = engine::execution::lease::LeaseConfig::new(
            seconds("lease-seconds", args.lease_seconds)?,
            seconds("heartbeat-seconds", args.heartbeat_seconds)?,
        )
        .map_err(|e| format!("--heartbeat-seconds: {e}"))?;
        Ok(Config {
            addr: args.addr,
            database_url: args.database_url.clone(),
            site_root: args
                .site_root
                .clone()
                .unwrap_or_else(|| DEFAULT_SITE_ROOT.to_owned()),
            demo: args.demo,
            demo_latency: std::time::Duration::from_millis(args.demo_latency_ms),
            packs_file: args.packs.clone(),
            secure_cookies: args
                .public_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://")),
            first_admin: args.first_admin.clone(),
            connectors_dir: args.connectors.clone(),
            fetch_allow: engine::connectors::guard::AllowList::from_env(),
            secrets: None,
            leases,
            max_inflight: args.max_inflight as usize,
            workspace_daily_share: f64::from(args.workspace_daily_share) / 100.0,
            token_requests_per_second: std::num::NonZeroU32::new(args.token_requests_per_second)
                .ok_or("--token-requests-per-second: give 1 or more")?,
            trusted_proxies: crate::auth::TrustedProxies::parse(&args.trusted_proxies)
                .map_err(|e| format!("--trusted-proxies: {e}"))?,
            calls: engine::ops::CallConfig::default(),
            page_rechecks: if args.recheck_pages == "off" {
                engine::execution::gone_pages::PageRechecks::Off
            } else {
                engine::execution::gone_pages::PageRechecks::On
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_is_the_default_command() {
        let cli = Cli::try_parse_from(["switchyard", "--addr", "127.0.0.1:9"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve_args().addr.port(), 9);

        let cli = Cli::try_parse_from(["switchyard", "serve", "--demo"]).unwrap();
        assert!(cli.serve_args().demo);
    }

    #[test]
    fn page_rechecks_are_on_unless_turned_off() {
        let config = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).unwrap();
            Config::try_from(cli.serve_args()).unwrap().page_rechecks
        };
        use engine::execution::gone_pages::PageRechecks;
        assert_eq!(config(&["switchyard"]), PageRechecks::On);
        assert_eq!(
            config(&["switchyard", "--recheck-pages", "off"]),
            PageRechecks::Off
        );
        assert!(Cli::try_parse_from(["switchyard", "--recheck-pages", "maybe"]).is_err());
    }

    #[test]
    fn operator_commands_parse_and_check_their_arguments() {
        let cli = Cli::try_parse_from([
            "switchyard",
            "user",
            "add",
            "--email",
            "a@example.org",
            "--workspace",
            "w",
            "--role",
            "admin",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::User(UserCommand::Add {
                role: model::Role::Admin,
                ..
            }))
        ));
        let err = Cli::try_parse_from([
            "switchyard",
            "user",
            "add",
            "--email",
            "a@example.org",
            "--workspace",
            "w",
            "--role",
            "owner",
        ])
        .unwrap_err();
        assert!(err.to_string().contains("owner"), "{err}");
        assert!(Cli::try_parse_from(["switchyard", "token", "revoke"]).is_err());
        assert!(Cli::try_parse_from(["switchyard", "token", "revoke", "--id", "3"]).is_ok());
    }

    #[test]
    fn an_https_public_url_makes_cookies_secure() {
        let plain = Cli::try_parse_from(["switchyard"]).unwrap();
        assert!(!Config::try_from(plain.serve_args()).unwrap().secure_cookies);
        let https =
            Cli::try_parse_from(["switchyard", "--public-url", "https://sy.example.org"]).unwrap();
        assert!(Config::try_from(https.serve_args()).unwrap().secure_cookies);
    }

    #[test]
    fn lease_settings_are_checked() {
        let cli = Cli::try_parse_from([
            "switchyard",
            "--lease-seconds",
            "4",
            "--heartbeat-seconds",
            "0.5",
            "--max-inflight",
            "32",
        ])
        .unwrap();
        let config = Config::try_from(cli.serve_args()).unwrap();
        assert_eq!(config.leases.lease, std::time::Duration::from_secs(4));
        assert_eq!(
            config.leases.heartbeat,
            std::time::Duration::from_millis(500)
        );
        assert_eq!(config.max_inflight, 32);
        let slow = Cli::try_parse_from(["switchyard", "--heartbeat-seconds", "20"]).unwrap();
        let err = Config::try_from(slow.serve_args()).unwrap_err();
        assert!(err.contains("at most half the lease"), "{err}");
        let zero = Cli::try_parse_from(["switchyard", "--lease-seconds", "0"]).unwrap();
        assert!(Config::try_from(zero.serve_args())
            .unwrap_err()
            .contains("--lease-seconds"));
        assert!(Cli::try_parse_from(["switchyard", "--max-inflight", "0"]).is_err());
    }

    #[test]
    fn a_workspace_s_daily_share_is_a_percent_of_the_cap() {
        let all = Cli::try_parse_from(["switchyard"]).unwrap();
        assert_eq!(
            Config::try_from(all.serve_args())
                .unwrap()
                .workspace_daily_share,
            1.0
        );
        let quarter = Cli::try_parse_from(["switchyard", "--workspace-daily-share", "25"]).unwrap();
        assert_eq!(
            Config::try_from(quarter.serve_args())
                .unwrap()
                .workspace_daily_share,
            0.25
        );
        for bad in ["0", "101", "half"] {
            let err = Cli::try_parse_from(["switchyard", "--workspace-daily-share", bad]);
            assert!(err.is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bad_address_is_refused() {
        let err = Cli::try_parse_from(["switchyard", "serve", "--addr", "nowhere"]).unwrap_err();
        assert!(err.to_string().contains("--addr"), "{err}");
    }
}
