//! `rzk services [NAME]`: the services of a curator-x-discovery registry, or one service's
//! instances (live with `--watch`).

use std::time::Duration;

use clap::Args;
use rzk_recipes::{
    discovery::{Instances, ServiceCache, ServiceDiscovery, ServiceInstance, DEFAULT_BASE_PATH},
    session::Session,
    Error,
};
use serde_json::Value;

use crate::connect::Connect;
use crate::error::CliError;
use crate::json;
use crate::supervise::StopSignals;

/// Flags of `rzk services`.
#[derive(Debug, Args)]
#[command(after_long_help = "Without NAME: the service names, one a line (none when the base \
path does not exist). With NAME: its instances, one a line, `ID ADDRESS:PORT` then \
`ssl=PORT`, `disabled` and `payload=JSON` where they apply. Nodes that are not instances are \
skipped and named on standard error.

With --watch: the instance set now and after every change, until SIGINT or SIGTERM (exit 0). \
Each set is a line `NAME: N instances` followed by its instances as above; with --json, one \
line {\"name\": ..., \"instances\": [...]} per set. The set survives disconnects, session \
expiry and server restarts; an instance whose session ends leaves the set once the server \
expires it.")]
pub(crate) struct ServicesArgs {
    /// A service name: list its instances.
    name: Option<String>,
    /// The registry's base path.
    #[arg(long, default_value = DEFAULT_BASE_PATH)]
    base_path: String,
    /// JSON: {"base_path": ..., "names": [...]} without NAME; with NAME, each instance's
    /// curator-x-discovery JSON, one a line.
    #[arg(long)]
    json: bool,
    /// Print the instance set again on every change, until Ctrl-C (needs NAME).
    #[arg(long, requires = "name")]
    watch: bool,
    /// Requested session timeout of --watch; the server may clamp it.
    #[arg(long, default_value_t = 10_000, requires = "watch")]
    session_timeout_ms: u64,
}

/// Runs `rzk services`.
pub(crate) async fn run(connect: &Connect, a: ServicesArgs) -> Result<(), CliError> {
    if a.watch {
        let timeout = Duration::from_millis(a.session_timeout_ms);
        let session = connect.election_session(Some(timeout)).await?;
        let result = watch(&session, &a).await;
        session.close().await;
        return result;
    }
    let session = connect.election_session(None).await?;
    let bad = |e: Error| CliError::usage(format!("{}: {e}", a.base_path));
    let discovery = ServiceDiscovery::<Value>::new(&session, &a.base_path).map_err(bad)?;
    let out = match &a.name {
        None => {
            let names = match discovery.query_for_names().await {
                Err(Error::NoNode { .. }) => Vec::new(),
                other => other.map_err(bad)?,
            };
            if a.json {
                #[derive(serde::Serialize)]
                struct Names<'a> {
                    base_path: &'a str,
                    names: &'a [String],
                }
                json::line(&Names { base_path: &a.base_path, names: &names }) + "\n"
            } else {
                names.iter().map(|n| format!("{n}\n")).collect()
            }
        }
        Some(name) => {
            let found = discovery.query_for_instances_reporting(name).await.map_err(bad)?;
            for m in &found.malformed {
                eprintln!("rzk services: skipping {m}");
            }
            let mut out = String::new();
            for i in &found.instances {
                out += &if a.json { json::line(i) } else { text_line(i) };
                out.push('\n');
            }
            out
        }
    };
    print!("{out}");
    session.close().await;
    Ok(())
}

/// Prints the instance set of `a.name` on every change until SIGINT or SIGTERM.
async fn watch(session: &Session, a: &ServicesArgs) -> Result<(), CliError> {
    let name = a.name.as_deref().unwrap_or_default();
    let bad = |e: Error| CliError::usage(format!("{}/{name}: {e}", a.base_path));
    let cache = ServiceCache::<Value>::new(session, &a.base_path, name).map_err(bad)?;
    let mut stop_signals = StopSignals::new()?;
    let mut sets = cache.changes();
    loop {
        let set = tokio::select! {
            set = sets.next() => set,
            _ = stop_signals.recv() => return Ok(()),
        };
        match set {
            Some(Ok(set)) => print!("{}", set_text(name, &set, a.json)?),
            // An instance node that may not be read: the others are still shown.
            Some(Err(e)) => eprintln!("rzk services: {e}"),
            None => {
                return Err(CliError::runtime(format!("{}/{name}: the watch ended", a.base_path)))
            }
        }
    }
}

/// One instance set as `--watch` prints it (malformed nodes named on standard error).
fn set_text(name: &str, set: &Instances<Value>, json: bool) -> Result<String, CliError> {
    for m in &set.malformed {
        eprintln!("rzk services: skipping {m}");
    }
    if json {
        #[derive(serde::Serialize)]
        struct Set<'a> {
            name: &'a str,
            instances: &'a [ServiceInstance<Value>],
        }
        return Ok(json::line(&Set { name, instances: &set.instances }) + "\n");
    }
    let n = set.instances.len();
    let mut out = format!("{name}: {n} instance{}\n", if n == 1 { "" } else { "s" });
    for i in &set.instances {
        out += &text_line(i);
        out.push('\n');
    }
    Ok(out)
}

fn text_line(i: &ServiceInstance<Value>) -> String {
    let address = i.address.as_deref().unwrap_or("-");
    let port = i.port.map_or_else(|| "-".to_string(), |p| p.to_string());
    let mut line = format!("{} {address}:{port}", i.id);
    if let Some(ssl) = i.ssl_port {
        line += &format!(" ssl={ssl}");
    }
    if !i.enabled {
        line += " disabled";
    }
    if let Some(payload) = &i.payload {
        line += &format!(" payload={payload}");
    }
    line
}
