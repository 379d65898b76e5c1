//! `rzk services [NAME]`: the services of a curator-x-discovery registry, or one service's
//! instances.

use clap::Args;
use rzk_recipes::{Error, ServiceDiscovery, ServiceInstance, DEFAULT_BASE_PATH};
use serde_json::Value;

use crate::connect::Connect;
use crate::error::CliError;
use crate::leader::json_str;

/// Flags of `rzk services`.
#[derive(Debug, Args)]
#[command(after_long_help = "Without NAME: the service names, one a line (none when the base \
path does not exist). With NAME: its instances, one a line, `ID ADDRESS:PORT` then \
`ssl=PORT`, `disabled` and `payload=JSON` where they apply. Nodes that are not instances are \
skipped and named on standard error.")]
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
}

/// Runs `rzk services`.
pub(crate) async fn run(connect: &Connect, a: ServicesArgs) -> Result<(), CliError> {
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
                let quoted: Vec<String> = names.iter().map(|n| json_str(n)).collect();
                format!(
                    "{{\"base_path\":{},\"names\":[{}]}}\n",
                    json_str(&a.base_path),
                    quoted.join(",")
                )
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
                out += &if a.json { json_line(i)? } else { text_line(i) };
                out.push('\n');
            }
            out
        }
    };
    print!("{out}");
    session.close().await;
    Ok(())
}

fn json_line(i: &ServiceInstance<Value>) -> Result<String, CliError> {
    let bytes = i.to_json().map_err(|e| CliError::runtime(e.to_string()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
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
