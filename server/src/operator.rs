//! The operator commands of the `switchyard` binary: `user add | link | remove`,
//! `token create | revoke | list`, `connector clear` and `backup`. They open the same database as `serve`
//! (and may run while it serves). Secrets go to standard output once and
//! nowhere else: never to the log.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Context;
use engine::packs::Catalog;
use engine::store::{redact_url, Store};
use engine::{Engine, EngineConfig};

use crate::cli::{BackupArgs, ConnectorCommand, TokenCommand, UserCommand};

async fn open(database_url: &str) -> anyhow::Result<Engine> {
    let store = Store::connect(database_url)
        .await
        .with_context(|| format!("cannot open the database {}", redact_url(database_url)))?;
    Ok(Engine::new(
        store,
        Catalog::builtin(),
        None,
        EngineConfig::default(),
    ))
}

/// The first line of standard input without its line end, when standard
/// input is not a terminal.
fn piped_line() -> anyhow::Result<Option<String>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .context("reading standard input")?;
    let line = line.trim_end_matches(['\r', '\n']).to_owned();
    Ok(Some(line))
}

/// Prints a set-password link, whole when the site's address is known.
fn print_link(out: &mut impl Write, public_url: Option<&str>, link: &str) -> anyhow::Result<()> {
    let days = engine::tenancy::credentials::PASSWORD_LINK_DAYS;
    match public_url {
        Some(base) => {
            writeln!(
                out,
                "Send them this link to choose their password (works once, for {days} days):"
            )?;
            writeln!(out, "{}{link}", base.trim_end_matches('/'))?;
        }
        None => {
            writeln!(out, "Send them this link, after your site's address, to choose their password (works once, for {days} days):")?;
            writeln!(out, "{link}")?;
        }
    }
    Ok(())
}

pub async fn user(command: UserCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match command {
        UserCommand::Add {
            email,
            workspace,
            role,
            public_url,
            db,
        } => {
            let engine = open(&db.database_url).await?;
            let password = piped_line()?;
            if password.as_deref() == Some("") {
                anyhow::bail!("standard input is empty: pipe the password, or run from a terminal to print a link that lets the user choose one");
            }
            let added = engine.add_user(&email, &workspace, role, password).await?;
            writeln!(
                out,
                "{} {} in workspace {workspace:?} as {role}{}.",
                if added.created_user {
                    "Added"
                } else {
                    "Updated"
                },
                email.trim().to_lowercase(),
                if added.created_workspace {
                    " (new workspace)"
                } else {
                    ""
                }
            )?;
            if let Some(link) = added.set_password_link {
                print_link(out, public_url.as_deref(), &link)?;
            }
            Ok(())
        }
        UserCommand::Link {
            email,
            public_url,
            db,
        } => {
            let engine = open(&db.database_url).await?;
            let link = engine.password_link_for(&email).await?;
            print_link(out, public_url.as_deref(), &link)
        }
        UserCommand::Remove {
            email,
            workspace,
            db,
        } => {
            let engine = open(&db.database_url).await?;
            engine.remove_user(&email, &workspace).await?;
            writeln!(
                out,
                "Removed {} from workspace {workspace:?}.",
                email.trim().to_lowercase()
            )?;
            Ok(())
        }
    }
}

pub async fn token(command: TokenCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create {
            email,
            workspace,
            db,
        } => {
            let engine = open(&db.database_url).await?;
            let (id, token) = engine.create_token(&email, &workspace).await?;
            writeln!(
                out,
                "Token {id} acts as {} in {workspace:?}; it is shown once (revoke: switchyard token revoke --id {id}):",
                email.trim().to_lowercase()
            )?;
            writeln!(out, "{token}")?;
            Ok(())
        }
        TokenCommand::Revoke { id, stdin, db } => {
            let engine = open(&db.database_url).await?;
            let revoked = match (id, stdin) {
                (Some(id), _) => engine.revoke_token(id).await?.then_some(id),
                (None, _) => {
                    let value = piped_line()?
                        .context("--stdin: pipe the token value into standard input")?;
                    engine.revoke_token_value(value.trim()).await?
                }
            };
            match revoked {
                Some(id) => writeln!(out, "Revoked token {id}.")?,
                None => anyhow::bail!("no live token matches (unknown, or already revoked)"),
            }
            Ok(())
        }
        TokenCommand::List { email, db } => {
            let engine = open(&db.database_url).await?;
            let email = email.map(|e| e.trim().to_lowercase());
            for t in engine.tokens(email.as_deref()).await? {
                let state = match (t.revoked_at, t.last_used_at) {
                    (Some(_), _) => "revoked".to_owned(),
                    (None, Some(at)) => format!("live, last used {}", engine::time::format_utc(at)),
                    (None, None) => "live, never used".to_owned(),
                };
                writeln!(
                    out,
                    "{}\t{}\t{}\tcreated {}\t{state}",
                    t.id,
                    t.email,
                    t.workspace,
                    engine::time::format_utc(t.created_at)
                )?;
            }
            Ok(())
        }
    }
}

pub async fn connector(command: ConnectorCommand, out: &mut impl Write) -> anyhow::Result<()> {
    match command {
        ConnectorCommand::Clear { id, db } => {
            let engine = open(&db.database_url).await?;
            let was = engine.clear_connector_health(&id).await?;
            match was {
                Some(status) => writeln!(
                    out,
                    "Cleared {} of {id:?}: it is available again wherever the server's key is used.",
                    status.kind()
                )?,
                None => writeln!(out, "{id:?} had nothing to clear.")?,
            }
            Ok(())
        }
    }
}

/// `switchyard backup --to FILE`: a consistent copy of a SQLite database,
/// taken while the servers run.
pub async fn backup(args: BackupArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let bytes = engine::store::backup::backup_sqlite(&args.db.database_url, &args.to).await?;
    writeln!(
        out,
        "Backed up {} to {} ({bytes} bytes): open it as sqlite://{} to restore.",
        redact_url(&args.db.database_url),
        args.to.display(),
        args.to.display()
    )?;
    Ok(())
}
