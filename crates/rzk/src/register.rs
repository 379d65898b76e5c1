//! `rzk register NAME --address A --port P [-- CMD]`: a service instance in curator-x-discovery's
//! layout, registered while the command runs (or until SIGINT/SIGTERM), re-registered on a new
//! session after a session loss, unregistered on exit.

use std::time::Duration;

use clap::Args;
use rzk_recipes::{
    discovery::{ServiceDiscovery, ServiceInstance, DEFAULT_BASE_PATH},
    session::ConnectionState,
};
use serde_json::Value;
use tokio::process::Command;

use crate::connect::Connect;
use crate::error::CliError;
use crate::supervise::StopSignals;
use crate::watchdog_proto::status_code;

/// How long the command has between SIGTERM and SIGKILL when rzk register is told to stop.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Flags of `rzk register`.
#[derive(Debug, Args)]
#[command(after_long_help = "The instance node is EPHEMERAL: it disappears when this process \
dies and its session expires. The command gets RZK_SERVICE_NAME, RZK_SERVICE_ID and \
RZK_SERVICE_PATH in its environment.

Exit status: the command's; without a command, 130 or 143 on SIGINT or SIGTERM; 2 for a usage \
or connection error.")]
pub(crate) struct RegisterArgs {
    /// The service name.
    name: String,
    /// The address clients connect to.
    #[arg(long)]
    address: String,
    /// The port clients connect to.
    #[arg(long)]
    port: u16,
    /// The TLS port.
    #[arg(long)]
    ssl_port: Option<u16>,
    /// The payload, as JSON.
    #[arg(long, value_name = "JSON")]
    payload: Option<String>,
    /// The instance id (default: a random UUID).
    #[arg(long)]
    id: Option<String>,
    /// The registry's base path.
    #[arg(long, default_value = DEFAULT_BASE_PATH)]
    base_path: String,
    /// Requested session timeout; the server may clamp it.
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    /// The ACL of the nodes this command creates (the instance, and the registry's paths if
    /// missing), in zkCli's syntax [default: world:anyone:cdrwa].
    #[arg(long, value_parser = crate::acl::parse_acl)]
    acl: Option<crate::acl::AclList>,
    /// The command and its arguments (none: stay registered until SIGINT or SIGTERM).
    #[arg(last = true)]
    command: Vec<String>,
}

fn say(msg: impl std::fmt::Display) {
    eprintln!("rzk register: {msg}");
}

/// Runs `rzk register`; returns the exit status.
pub(crate) async fn run(connect: &Connect, a: RegisterArgs) -> Result<u8, CliError> {
    let mut instance = ServiceInstance::new(&a.name, &a.address, a.port);
    if let Some(id) = &a.id {
        instance = instance.with_id(id);
    }
    if let Some(port) = a.ssl_port {
        instance = instance.with_ssl_port(port);
    }
    if let Some(json) = &a.payload {
        let payload: Value = serde_json::from_str(json)
            .map_err(|e| CliError::usage(format!("--payload is not JSON: {e}")))?;
        instance = instance.with_payload(payload);
    }
    let timeout = Duration::from_millis(a.session_timeout_ms);
    let session = connect.election_session(Some(timeout)).await?;
    let bad = |e: rzk_recipes::Error| CliError::usage(format!("{}: {e}", a.base_path));
    let acls = crate::acl::recipe_acls(a.acl.as_ref());
    let discovery =
        ServiceDiscovery::<Value>::with_acls(&session, &a.base_path, acls).map_err(bad)?;
    let mut stop_signals = StopSignals::new()?;
    let path = tokio::select! {
        p = discovery.register(&instance) => p.map_err(bad)?,
        code = stop_signals.recv() => return Ok(code),
    };
    say(format_args!("registered {} as {path}", a.name));
    let reporter = tokio::spawn(report_sessions(session.clone()));
    let code = if a.command.is_empty() {
        stop_signals.recv().await
    } else {
        let envs = [
            ("RZK_SERVICE_NAME", a.name.clone()),
            ("RZK_SERVICE_ID", instance.id.clone()),
            ("RZK_SERVICE_PATH", path.clone()),
        ];
        run_command(&a.command, &envs, &mut stop_signals).await?
    };
    reporter.abort();
    if let Err(e) = discovery.close().await {
        say(format_args!("could not unregister {path}: {e}"));
    } else {
        say(format_args!("unregistered {path}"));
    }
    session.close().await;
    Ok(code)
}

/// Runs the command to its end (stopping it on SIGINT/SIGTERM); its exit status.
async fn run_command(
    command: &[String],
    envs: &[(&str, String)],
    stop_signals: &mut StopSignals,
) -> Result<u8, CliError> {
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| CliError::runtime(format!("starting {:?}: {e}", command[0])))?;
    tokio::select! {
        st = child.wait() => Ok(status_code(st.ok())),
        code = stop_signals.recv() => {
            if let Some(pid) = child.id().and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            if tokio::time::timeout(STOP_GRACE, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
            Ok(code)
        }
    }
}

/// Reports session losses and the re-registration that follows them.
async fn report_sessions(session: rzk_recipes::session::Session) {
    let mut states = session.states();
    while let Some(event) = states.recv().await {
        match event.state {
            ConnectionState::Lost => say("session lost; re-registering on a new session"),
            ConnectionState::Reconnected { new_session: true } => {
                say(format_args!("new session (generation {})", event.generation));
            }
            _ => {}
        }
    }
}
