//! The four-letter admin words, in ZooKeeper's output formats (tools parse them).
//!
//! Deviation on purpose: `srvr` prints the build date as `MM/dd/yyyy HH:mm GMT`, the pre-3.7
//! format, because go-zookeeper's harness still parses it that way; every other client ignores
//! the date.

use std::fmt::Write as _;

use crate::config::Config;
use crate::core::{Core, Now};
use crate::ZOOKEEPER_COMPAT_VERSION;

/// The version line all words share.
pub fn version_line() -> String {
    format!(
        "{ZOOKEEPER_COMPAT_VERSION}-rzk-{}, built on 01/01/2026 00:00 GMT",
        env!("CARGO_PKG_VERSION")
    )
}

/// ZooKeeper's node count includes an alias entry for the root, so a fresh server shows 5.
fn zk_node_count(core: &Core) -> usize {
    core.state().node_count() + 1
}

fn server_stats(core: &Core, out: &mut String) {
    let c = core.counters();
    let _ = writeln!(out, "Latency min/avg/max: 0/0.0/0");
    let _ = writeln!(out, "Received: {}", c.received);
    let _ = writeln!(out, "Sent: {}", c.sent);
    let _ = writeln!(out, "Connections: {}", core.connection_count());
    let _ = writeln!(out, "Outstanding: {}", core.outstanding());
    let _ = writeln!(out, "Zxid: {:#x}", core.state().last_zxid());
    let _ = writeln!(out, "Mode: standalone");
    let _ = writeln!(out, "Node count: {}", zk_node_count(core));
}

fn connections(core: &Core, out: &mut String) {
    for (peer, sid, recv, sent, op) in core.connection_details() {
        let _ = write!(out, " /{peer}[1](queued=0,recved={recv},sent={sent}");
        if let Some(sid) = sid {
            let _ = write!(out, ",sid={sid:#x},lop={op}");
        }
        let _ = writeln!(out, ")");
    }
}

/// Runs a four-letter word. `None` if the word is unknown; a refusal text if it is not
/// whitelisted.
pub fn run(core: &Core, word: &str, now: Now) -> Option<String> {
    if !rzk_proto::frame::FOUR_LETTER_WORDS.contains(&word) {
        return None;
    }
    if !core.config().four_letter_word_allowed(word) {
        return Some(format!("{word} is not executed because it is not in the whitelist.\n"));
    }
    let mut out = String::new();
    match word {
        "ruok" => out.push_str("imok"),
        "isro" => out.push_str("rw"),
        "srvr" => {
            let _ = writeln!(out, "Zookeeper version: {}", version_line());
            server_stats(core, &mut out);
        }
        "stat" => {
            let _ = writeln!(out, "Zookeeper version: {}", version_line());
            out.push_str("Clients:\n");
            connections(core, &mut out);
            out.push('\n');
            server_stats(core, &mut out);
        }
        "cons" => {
            connections(core, &mut out);
            out.push('\n');
        }
        "conf" => conf(core.config(), &mut out),
        "envi" => {
            out.push_str("Environment:\n");
            let _ = writeln!(out, "zookeeper.version={}", version_line());
            let _ = writeln!(out, "rzk.version={}", env!("CARGO_PKG_VERSION"));
            let _ = writeln!(out, "os.name={}", std::env::consts::OS);
            let _ = writeln!(out, "os.arch={}", std::env::consts::ARCH);
        }
        "wchs" => {
            let (conns, paths, total) = core.watches().counts();
            let _ = writeln!(out, "{conns} connections watching {paths} paths");
            let _ = writeln!(out, "Total watches:{total}");
        }
        "wchc" => {
            for (conn, paths) in core.watches().paths_by_conn() {
                let _ = writeln!(out, "conn {conn:#x}");
                for p in paths {
                    let _ = writeln!(out, "\t{p}");
                }
            }
        }
        "wchp" => {
            for (p, conns) in core.watches().conns_by_path() {
                let _ = writeln!(out, "{p}");
                for c in conns {
                    let _ = writeln!(out, "\tconn {c:#x}");
                }
            }
        }
        "dump" => dump(core, now, &mut out),
        "mntr" => mntr(core, now, &mut out),
        "dirs" => {
            out.push_str("datadir_size: 0\nlogdir_size: 0\n");
        }
        "srst" => out.push_str("Server stats reset.\n"),
        "crst" => out.push_str("Connection stats reset.\n"),
        "gtmk" => out.push_str("0\n"),
        "stmk" => {}
        _ => return None,
    }
    Some(out)
}

/// `conf`: the settings, under ZooKeeper's names.
fn conf(cfg: &Config, out: &mut String) {
    let dir = cfg.data_dir.clone().unwrap_or_else(|| "(in memory)".into());
    let _ = writeln!(out, "clientPort={}", cfg.client_port);
    let _ = writeln!(out, "secureClientPort=-1");
    let _ = writeln!(out, "dataDir={dir}");
    let _ = writeln!(out, "dataLogDir={dir}");
    let _ = writeln!(out, "tickTime={}", cfg.tick_ms);
    let _ = writeln!(out, "minSessionTimeout={}", cfg.session_timeout_ms_min);
    let _ = writeln!(out, "maxSessionTimeout={}", cfg.session_timeout_ms_max);
    let _ = writeln!(out, "jute.maxbuffer={}", cfg.max_packet_bytes);
    let _ = writeln!(out, "extendedTypesEnabled={}", cfg.extended_types_enabled);
    let _ = writeln!(out, "serverId=0");
}

/// `dump`: session deadlines and each session's ephemerals.
fn dump(core: &Core, now: Now, out: &mut String) {
    let st = core.state();
    out.push_str("SessionTracker dump:\n");
    let deadlines = core.session_deadlines(now);
    let _ = writeln!(out, "Session Sets ({}):", deadlines.len());
    for (id, ms) in deadlines {
        let _ = writeln!(out, "\t{id:#x} expires in {ms} ms");
    }
    out.push_str("ephemeral nodes dump:\n");
    let with: Vec<i64> =
        st.sessions().keys().copied().filter(|id| st.ephemerals_of(*id).next().is_some()).collect();
    let _ = writeln!(out, "Sessions with Ephemerals ({}):", with.len());
    for id in with {
        let _ = writeln!(out, "{id:#x}:");
        for p in st.ephemerals_of(id) {
            let _ = writeln!(out, "\t{p}");
        }
    }
}

/// `mntr`: the monitoring rows, tab-separated.
fn mntr(core: &Core, now: Now, out: &mut String) {
    let st = core.state();
    let (_, _, watches) = core.watches().counts();
    let ephemerals = st.ephemeral_count();
    let c = core.counters();
    let rows: [(&str, String); 15] = [
        ("zk_version", version_line()),
        ("zk_server_state", "standalone".into()),
        ("zk_ephemerals_count", ephemerals.to_string()),
        ("zk_num_alive_connections", core.connection_count().to_string()),
        ("zk_avg_latency", "0.0".into()),
        ("zk_outstanding_requests", core.outstanding().to_string()),
        ("zk_znode_count", zk_node_count(core).to_string()),
        ("zk_global_sessions", st.sessions().len().to_string()),
        ("zk_packets_sent", c.sent.to_string()),
        ("zk_packets_received", c.received.to_string()),
        ("zk_watch_count", watches.to_string()),
        ("zk_approximate_data_size", st.approximate_data_bytes().to_string()),
        ("zk_uptime", core.uptime_ms(now).to_string()),
        ("zk_min_latency", "0".into()),
        ("zk_max_latency", "0".into()),
    ];
    for (k, v) in rows {
        let _ = writeln!(out, "{k}\t{v}");
    }
}
