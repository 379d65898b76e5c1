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

/// What the server shell measures and the core cannot (request latency, the disk's timings),
/// for the words that show it. The default shows zeros, as a server that measured nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShellFigures {
    /// Request latency min / avg / max, in milliseconds (`srvr`, `stat`, `mntr`).
    pub latency_ms: (u64, f64, u64),
    /// More `mntr` rows, keyed as the AdminServer's `monitor` names them (`mntr` adds `zk_`).
    pub mntr_rows: Vec<(String, Figure)>,
}

/// One figure of a `mntr` row: a whole number, or an average.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    /// A count, or a value ZooKeeper truncates to a whole number (min, max, sum, percentiles).
    Whole(u64),
    /// An average, rounded to four decimals where it is shown.
    Mean(f64),
}

impl Figure {
    /// As `mntr` prints it.
    pub fn mntr_text(self) -> String {
        match self {
            Figure::Whole(v) => v.to_string(),
            Figure::Mean(v) => zk_decimal(v),
        }
    }
}

/// An average as ZooKeeper reports it: rounded to four decimals.
pub fn zk_round(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// An average as ZooKeeper prints it: [`zk_round`]ed, with at least one decimal (`0.0`,
/// `3.75`, `4.6667`).
pub fn zk_decimal(v: f64) -> String {
    format!("{:?}", zk_round(v))
}

fn server_stats(core: &Core, shell: &ShellFigures, out: &mut String) {
    let c = core.counters();
    let (min, avg, max) = shell.latency_ms;
    let _ = writeln!(out, "Latency min/avg/max: {min}/{}/{max}", zk_decimal(avg));
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
    run_with(core, word, now, &ShellFigures::default())
}

/// [`run`], showing the shell's figures where ZooKeeper's words show them.
pub fn run_with(core: &Core, word: &str, now: Now, shell: &ShellFigures) -> Option<String> {
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
            server_stats(core, shell, &mut out);
        }
        "stat" => {
            let _ = writeln!(out, "Zookeeper version: {}", version_line());
            out.push_str("Clients:\n");
            connections(core, &mut out);
            out.push('\n');
            server_stats(core, shell, &mut out);
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
        "mntr" => mntr(core, now, shell, &mut out),
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
/// The numbers `mntr` reports, which ZooKeeper's Prometheus provider exports as gauges
/// under the same names without `mntr`'s `zk_` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauges {
    /// Ephemeral nodes.
    pub ephemerals_count: u64,
    /// Open client connections.
    pub num_alive_connections: u64,
    /// Outputs waiting for durability.
    pub outstanding_requests: u64,
    /// Nodes, counting `/zookeeper/quota` as ZooKeeper does.
    pub znode_count: u64,
    /// Live sessions.
    pub global_sessions: u64,
    /// Packets sent since start.
    pub packets_sent: u64,
    /// Packets received since start.
    pub packets_received: u64,
    /// Watches set.
    pub watch_count: u64,
    /// Bytes of paths and data in the tree.
    pub approximate_data_size: u64,
    /// Milliseconds since the server started.
    pub uptime: u64,
}

impl Gauges {
    /// The gauges of `core` at `now`: a few counts it keeps, no walk of the tree.
    pub fn of(core: &Core, now: Now) -> Gauges {
        let st = core.state();
        let c = core.counters();
        let n = |v: usize| v as u64;
        Gauges {
            ephemerals_count: n(st.ephemeral_count()),
            num_alive_connections: n(core.connection_count()),
            outstanding_requests: n(core.outstanding()),
            znode_count: n(zk_node_count(core)),
            global_sessions: n(st.sessions().len()),
            packets_sent: c.sent,
            packets_received: c.received,
            watch_count: n(core.watches().counts().2),
            approximate_data_size: st.approximate_data_bytes(),
            uptime: core.uptime_ms(now),
        }
    }

    /// Each gauge with its ZooKeeper name.
    pub fn named(&self) -> [(&'static str, u64); 10] {
        [
            ("ephemerals_count", self.ephemerals_count),
            ("num_alive_connections", self.num_alive_connections),
            ("outstanding_requests", self.outstanding_requests),
            ("znode_count", self.znode_count),
            ("global_sessions", self.global_sessions),
            ("packets_sent", self.packets_sent),
            ("packets_received", self.packets_received),
            ("watch_count", self.watch_count),
            ("approximate_data_size", self.approximate_data_size),
            ("uptime", self.uptime),
        ]
    }
}

fn mntr(core: &Core, now: Now, shell: &ShellFigures, out: &mut String) {
    let g = Gauges::of(core, now);
    let (min, avg, max) = shell.latency_ms;
    let rows: [(&str, String); 15] = [
        ("zk_version", version_line()),
        ("zk_server_state", "standalone".into()),
        ("zk_ephemerals_count", g.ephemerals_count.to_string()),
        ("zk_num_alive_connections", g.num_alive_connections.to_string()),
        ("zk_avg_latency", zk_decimal(avg)),
        ("zk_outstanding_requests", g.outstanding_requests.to_string()),
        ("zk_znode_count", g.znode_count.to_string()),
        ("zk_global_sessions", g.global_sessions.to_string()),
        ("zk_packets_sent", g.packets_sent.to_string()),
        ("zk_packets_received", g.packets_received.to_string()),
        ("zk_watch_count", g.watch_count.to_string()),
        ("zk_approximate_data_size", g.approximate_data_size.to_string()),
        ("zk_uptime", g.uptime.to_string()),
        ("zk_min_latency", min.to_string()),
        ("zk_max_latency", max.to_string()),
    ];
    for (k, v) in rows {
        let _ = writeln!(out, "{k}\t{v}");
    }
    for (k, v) in &shell.mntr_rows {
        let _ = writeln!(out, "zk_{k}\t{}", v.mntr_text());
    }
}
