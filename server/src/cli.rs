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
}

#[derive(Clone, Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "SWITCHYARD_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,
    /// Database: `sqlite://path` (created when missing) or `postgres://...`.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, hide_env_values = true)]
    pub database_url: String,
    /// Folder holding the built site (`pkg/` with the wasm, JavaScript and CSS).
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = DEFAULT_SITE_ROOT)]
    pub site_root: String,
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
}

impl Cli {
    /// The serve settings, whether `serve` was named or not.
    pub fn serve_args(&self) -> &ServeArgs {
        match &self.command {
            Some(Command::Serve(args)) => args,
            None => &self.serve,
        }
    }
}

impl From<&ServeArgs> for Config {
    fn from(args: &ServeArgs) -> Self {
        Config {
            addr: args.addr,
            database_url: args.database_url.clone(),
            site_root: args.site_root.clone(),
            demo: args.demo,
            demo_latency: std::time::Duration::from_millis(args.demo_latency_ms),
            packs_file: args.packs.clone(),
        }
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
    fn a_bad_address_is_refused() {
        let err = Cli::try_parse_from(["switchyard", "serve", "--addr", "nowhere"]).unwrap_err();
        assert!(err.to_string().contains("--addr"), "{err}");
    }
}
