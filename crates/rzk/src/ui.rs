//! `rzk ui`: the web console (rzk-console) over the `--connect` servers, with the same
//! credentials and TLS flags as every other command.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use rzk_console::{BasicAuth, Console, ConsoleConfig};

use crate::connect::Connect;
use crate::error::CliError;

/// Flags of `rzk ui`.
#[derive(Debug, Args)]
pub(crate) struct UiArgs {
    /// Where to serve the console. Loopback by default: anyone who can reach the port reads
    /// the tree as the console's session may.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Ask for this user on every request (HTTP Basic), with the password in
    /// --ui-password-file.
    #[arg(long, requires = "ui_password_file", value_name = "USER")]
    ui_user: Option<String>,
    /// The file whose first line is the console login's password.
    #[arg(long, requires = "ui_user", value_name = "FILE")]
    ui_password_file: Option<PathBuf>,
    /// Offer writes: set a node's data at the version shown, delete a node, ask an election's
    /// or a lock's participant to go (delete its node); each asks to confirm first. The
    /// writes are the console's session's, under its credentials and the nodes' ACLs.
    #[arg(long)]
    allow_writes: bool,
}

impl UiArgs {
    fn config(&self) -> Result<ConsoleConfig, CliError> {
        let mut config = ConsoleConfig::default().with_writes(self.allow_writes);
        if let (Some(user), Some(file)) = (&self.ui_user, &self.ui_password_file) {
            let text = std::fs::read_to_string(file)
                .map_err(|e| CliError::usage(format!("{}: {e}", file.display())))?;
            let password = text.lines().next().unwrap_or("");
            if password.is_empty() {
                return Err(CliError::usage(format!(
                    "{}: no password on its first line",
                    file.display()
                )));
            }
            config = config.with_auth(BasicAuth::new(user.clone(), password));
        }
        Ok(config)
    }
}

/// Runs `rzk ui` until interrupted.
pub(crate) async fn run(connect: &Connect, a: UiArgs) -> Result<(), CliError> {
    let config = a.config()?.with_servers(&connect.hosts);
    if !a.bind.ip().is_loopback() && config.auth.is_none() {
        eprintln!(
            "rzk: warning: the console on {} asks for no login (--ui-user, --ui-password-file)",
            a.bind
        );
    }
    let session = connect.election_session(None).await?;
    let console = Console::start(session, a.bind, config)
        .await
        .map_err(|e| CliError::usage(e.to_string()))?;
    println!("rzk console on http://{}/ reading {}", console.addr(), connect.hosts);
    tokio::select! {
        biased;
        _ = tokio::signal::ctrl_c() => Ok(()),
        r = console.wait() => r.map_err(|e| CliError::runtime(e.to_string())),
    }
}
