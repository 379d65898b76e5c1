//! `rzk ui`: the web console (rzk-console) over the `--connect` servers, with the same
//! credentials and TLS flags as every other command; and `rzk server --console`, the same
//! console on the server's AdminServer port.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use rzk_console::{BasicAuth, Console, ConsoleConfig};
use rzk_recipes::session::{Session, SessionConfig};

use crate::connect::Connect;
use crate::error::CliError;

/// Where `rzk server --console` serves the console on the AdminServer's port.
pub(crate) const CONSOLE_MOUNT: &str = "/console";

/// Flags of `rzk ui`.
#[derive(Debug, Args)]
pub(crate) struct UiArgs {
    /// Where to serve the console. Loopback by default: anyone who can reach the port reads
    /// the tree as the console's session may.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    #[command(flatten)]
    console: ConsoleArgs,
}

/// The console's own flags, `rzk ui`'s and `rzk server --console`'s.
#[derive(Debug, Clone, Args)]
pub(crate) struct ConsoleArgs {
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

impl ConsoleArgs {
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

/// Says so when a console anyone on the network may reach asks for no login.
fn warn_if_open(bind: SocketAddr, config: &ConsoleConfig) {
    if !bind.ip().is_loopback() && config.auth.is_none() {
        eprintln!(
            "rzk: warning: the console on {bind} asks for no login (--ui-user, --ui-password-file)"
        );
    }
}

/// Runs `rzk ui` until interrupted.
pub(crate) async fn run(connect: &Connect, a: UiArgs) -> Result<(), CliError> {
    let config = a.console.config()?.with_servers(&connect.hosts);
    warn_if_open(a.bind, &config);
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

/// `rzk server --console`: the console on `server`'s AdminServer port under [`CONSOLE_MOUNT`],
/// reading through a session of its own on the plain client port, over loopback when the
/// server listens on every address, with `connect`'s `--auth` credentials (a server that
/// enforces authentication serves it only so).
///
/// # Errors
/// A usage error when the server has no plain client port or no AdminServer; a runtime one
/// when the session cannot be opened within `connect`'s timeout.
///
/// # Cancellation safety
/// Safe: nothing is mounted until the session is open.
pub(crate) async fn mount_on_server(
    server: &rzk_server::Server,
    connect: &Connect,
    a: &ConsoleArgs,
) -> Result<(), CliError> {
    let Some(admin) = server.admin_addr() else {
        return Err(CliError::usage(
            "--console is served on the AdminServer's port (--admin-port)",
        ));
    };
    let mut client_port = server.local_addr();
    if client_port.ip().is_unspecified() {
        client_port.set_ip([127, 0, 0, 1].into());
    }
    let hosts = client_port.to_string();
    let config = a.config()?.with_servers(&hosts);
    warn_if_open(admin, &config);
    let limit = std::time::Duration::from_millis(connect.connect_timeout_ms);
    let mut session = SessionConfig::new(&hosts).with_connect_timeout(limit);
    for c in connect.credentials()? {
        session = session.with_auth(c.scheme, c.auth);
    }
    let opened = tokio::time::timeout(limit, Session::connect(session)).await;
    let session = match opened {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(CliError::runtime(format!("the console's session: {e}"))),
        Err(_) => {
            return Err(CliError::runtime(format!("the console's session: no answer from {hosts}")))
        }
    };
    let handler =
        Console::handler(session, config, admin).map_err(|e| CliError::runtime(e.to_string()))?;
    server.mount_admin(CONSOLE_MOUNT, handler).map_err(|e| CliError::usage(e.to_string()))?;
    tracing::info!("console on http://{admin}{CONSOLE_MOUNT}/");
    Ok(())
}
