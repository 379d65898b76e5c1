//! The AdminServer's commands: ZooKeeper 3.8's names, aliases and JSON shapes (the same keys,
//! types and nesting, `command` and `error` in every response), with rzk's values.
//!
//! The numbers are the ones the four-letter words read (`rzk_core::four_letter::Gauges` and
//! the core's monitoring accessors), taken under one short hold of the core's lock. What rzk
//! does not measure (latencies, response buffer sizes) or what has no meaning in a single-node
//! server (quorum state, the JVM) gets the value a standalone ZooKeeper gives before it has a
//! sample: 0, -1, `"<NA>"` or an empty collection.

use std::collections::BTreeMap;
use std::path::Path;

use rzk_core::four_letter::{version_line, zk_round, Figure, Gauges, ShellFigures};
use rzk_core::{Core, Now};
use serde_json::{json, Map, Value};

use crate::admin_host::{self, data_dirs};
use crate::config::ServerConfig;
use crate::shared::Inner;

/// Each command rzk serves: its name, then its aliases, as ZooKeeper 3.8 names them. Sorted by
/// name, the order of ZooKeeper's `/commands` list.
pub(crate) const COMMANDS: &[(&str, &[&str])] = &[
    ("configuration", &["conf", "config"]),
    ("connection_stat_reset", &["crst"]),
    ("connections", &["cons"]),
    ("dirs", &[]),
    ("dump", &[]),
    ("environment", &["env", "envi"]),
    ("get_trace_mask", &["gtmk"]),
    ("hash", &[]),
    ("initial_configuration", &["icfg"]),
    ("is_read_only", &["isro"]),
    ("last_snapshot", &["lsnp"]),
    ("leader", &["lead"]),
    ("monitor", &["mntr"]),
    ("observer_connection_stat_reset", &["orst"]),
    ("observers", &["obsr"]),
    ("ruok", &[]),
    ("server_stats", &["srvr"]),
    ("set_trace_mask", &["stmk"]),
    ("stat_reset", &["srst"]),
    ("stats", &["stat"]),
    ("system_properties", &["sysp"]),
    ("voting_view", &[]),
    ("watch_summary", &["wchs"]),
    ("watches", &["wchc"]),
    ("watches_by_path", &["wchp"]),
    ("zabstate", &[]),
];

/// The command `name` names, directly or by an alias; names are case-sensitive, as in
/// ZooKeeper.
pub(crate) fn resolve(name: &str) -> Option<&'static str> {
    COMMANDS.iter().find(|(n, aliases)| *n == name || aliases.contains(&name)).map(|(n, _)| *n)
}

/// The response to command `name` with the request's `query` string: its fields, `command`
/// (the command's own name, not the alias) and `error` (`null` on success). An unknown name
/// gets ZooKeeper's `"Unknown command: <name>"` under the name as given.
pub(crate) fn run(inner: &Inner, name: &str, query: Option<&str>) -> Value {
    let Some(command) = resolve(name) else {
        return json!({ "command": name, "error": format!("Unknown command: {name}") });
    };
    if let Some(mut fields) = admin_host::run(&inner.config, command, query) {
        fields.insert("command".into(), command.into());
        fields.entry("error").or_insert(Value::Null);
        return Value::Object(fields);
    }
    // Directory sizes are read from the file system, outside the core's lock; the shell's
    // figures take the lock on their own.
    let sizes = matches!(command, "dirs" | "server_stats" | "stats").then(|| dirs(&inner.config));
    let shell = matches!(command, "monitor" | "server_stats" | "stats")
        .then(|| inner.stats_report().shell_figures());
    let mut fields = match command {
        "dirs" => sizes.clone().unwrap_or_default(),
        _ => {
            let sh = inner.lock();
            from_core(&sh.core, inner.now(), command, &inner.config)
        }
    };
    if let (Some(sizes), Some(Value::Object(stats))) = (sizes, fields.get_mut("server_stats")) {
        stats.insert("data_dir_size".into(), sizes["datadir_size"].clone());
        stats.insert("log_dir_size".into(), sizes["logdir_size"].clone());
    }
    if let Some(shell) = shell {
        with_shell_figures(command, &mut fields, &shell);
    }
    fields.insert("command".into(), command.into());
    fields.entry("error").or_insert(Value::Null);
    Value::Object(fields)
}

/// The fields of a command answered from the core.
fn from_core(core: &Core, now: Now, command: &str, cfg: &ServerConfig) -> Map<String, Value> {
    let v = match command {
        "configuration" => configuration(core, cfg),
        "connections" => json!({
            "connections": connections(core, false),
            "secure_connections": [],
        }),
        "dump" => dump(core, now),
        "environment" => environment(),
        "is_read_only" => json!({ "read_only": false }),
        // A standalone ZooKeeper is not a quorum peer: it answers `leader` with this error.
        "leader" => json!({ "error": "server is not initialized" }),
        "monitor" => monitor(core, now),
        "observers" => json!({ "synced_observers": 0, "observers": [] }),
        "server_stats" => server_stats(core, now),
        "stats" => {
            let mut v = server_stats(core, now);
            v["connections"] = connections(core, true);
            v["secure_connections"] = json!([]);
            v
        }
        "voting_view" => json!({ "current_config": {} }),
        "watch_summary" => {
            let (conns, paths, total) = core.watches().counts();
            json!({ "num_connections": conns, "num_paths": paths, "num_total_watches": total })
        }
        "watches" => watches(core),
        "watches_by_path" => watches_by_path(core),
        "zabstate" => json!({ "voting": false, "zabstate": "" }),
        // ruok, stat_reset, connection_stat_reset, observer_connection_stat_reset: nothing but
        // `command` and `error`. rzk does not reset its latency figures (they also feed
        // /metrics, whose counts only grow), and has no observers.
        _ => json!({}),
    };
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn configuration(core: &Core, cfg: &ServerConfig) -> Value {
    let c = core.config();
    let (data_dir, data_log_dir) = match data_dirs(cfg) {
        Some((snap, log)) => (snap.display().to_string(), log.display().to_string()),
        None => ("(in memory)".to_string(), "(in memory)".to_string()),
    };
    json!({
        "client_port": c.client_port,
        "data_dir": data_dir,
        "data_log_dir": data_log_dir,
        "tick_time": c.tick_ms,
        "max_client_cnxns": cfg.max_client_connections_per_ip,
        "min_session_timeout": c.session_timeout_ms_min,
        "max_session_timeout": c.session_timeout_ms_max,
        // A standalone ZooKeeper's id, as the `conf` word reports it.
        "server_id": 0,
        // ZooKeeper's "unset": the operating system's default backlog.
        "client_port_listen_backlog": -1,
    })
}

/// Bytes in the files directly under `dir`; 0 if it cannot be read.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn dirs(cfg: &ServerConfig) -> Map<String, Value> {
    let (data, log) = data_dirs(cfg).map_or((0, 0), |(s, l)| (dir_bytes(s), dir_bytes(l)));
    let mut m = Map::new();
    m.insert("datadir_size".into(), data.into());
    m.insert("logdir_size".into(), log.into());
    m
}

/// Response buffer sizes: rzk does not record them; -1 is ZooKeeper's "no sample yet".
fn buffer_stats() -> Value {
    json!({ "last_buffer_size": -1, "min_buffer_size": -1, "max_buffer_size": -1 })
}

fn server_stats(core: &Core, now: Now) -> Value {
    let g = Gauges::of(core, now);
    json!({
        "version": version_line(),
        "read_only": false,
        "server_stats": {
            "packets_sent": g.packets_sent,
            "packets_received": g.packets_received,
            "fsync_threshold_exceed_count": 0,
            "client_response_stats": buffer_stats(),
            // Filled in by `run`, outside the core's lock.
            "data_dir_size": 0,
            "log_dir_size": 0,
            "provider_null": false,
            "server_state": "standalone",
            "last_processed_zxid": core.state().last_zxid(),
            "outstanding_requests": g.outstanding_requests,
            "avg_latency": 0.0,
            "max_latency": 0,
            "min_latency": 0,
            "num_alive_client_connections": g.num_alive_connections,
            "uptime": g.uptime,
            "auth_failed_count": 0,
            "non_mtlsremote_conn_count": 0,
            "non_mtlslocal_conn_count": 0,
        },
        "client_response": buffer_stats(),
        "node_count": g.znode_count,
    })
}

/// Each connection as ZooKeeper's `getConnectionInfo(brief)` gives it.
fn connections(core: &Core, brief: bool) -> Value {
    let rows: Vec<Value> = core
        .connection_details()
        .into_iter()
        .map(|(peer, sid, received, sent, last_op)| {
            let mut row = json!({
                "remote_socket_address": peer.to_string(),
                "interest_ops": 1,
                "outstanding_requests": 0,
                "packets_received": received,
                "packets_sent": sent,
            });
            if !brief {
                let timeout = sid.and_then(|s| core.session_timeout_ms(s)).unwrap_or(0);
                let more = json!({
                    "session_id": sid.unwrap_or(0),
                    "last_operation": if sid.is_some() { last_op } else { "NA" },
                    // Not recorded by rzk: ZooKeeper's values before a first request.
                    "established": 0,
                    "session_timeout": timeout,
                    "last_cxid": -1,
                    "last_zxid": -1,
                    "last_response_time": 0,
                    "last_latency": 0,
                    "min_latency": 0,
                    "avg_latency": 0,
                    "max_latency": 0,
                });
                if let (Value::Object(r), Value::Object(m)) = (&mut row, more) {
                    r.extend(m);
                }
            }
            row
        })
        .collect();
    Value::Array(rows)
}

/// `dump`: sessions by expiry time (milliseconds on the server's monotonic clock, as
/// ZooKeeper's are on its own), and the ephemerals of each session that has some.
fn dump(core: &Core, now: Now) -> Value {
    let mut by_expiry: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (id, remaining_ms) in core.session_deadlines(now) {
        let at = now.mono_ms as i64 + remaining_ms;
        by_expiry.entry(at.to_string()).or_default().push(id);
    }
    let st = core.state();
    let ephemerals: Map<String, Value> = st
        .sessions()
        .keys()
        .filter_map(|id| {
            let paths: Vec<&str> = st.ephemerals_of(*id).collect();
            (!paths.is_empty()).then(|| (id.to_string(), json!(paths)))
        })
        .collect();
    json!({
        "expiry_time_to_session_ids": by_expiry,
        "session_id_to_ephemeral_paths": ephemerals,
    })
}

/// `watches`: watched paths by session (ZooKeeper keys watches by session, rzk by connection).
fn watches(core: &Core) -> Value {
    let mut by_session: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (conn, paths) in core.watches().paths_by_conn() {
        let sid = core.session_of(conn).unwrap_or(0);
        let entry = by_session.entry(sid.to_string()).or_default();
        entry.extend(paths);
        entry.sort_unstable();
        entry.dedup();
    }
    json!({ "session_id_to_watched_paths": by_session })
}

/// `watches_by_path`: the sessions watching each path.
fn watches_by_path(core: &Core) -> Value {
    let by_path: BTreeMap<&str, Vec<i64>> = core
        .watches()
        .conns_by_path()
        .into_iter()
        .map(|(path, conns)| {
            let mut sids: Vec<i64> =
                conns.into_iter().map(|c| core.session_of(c).unwrap_or(0)).collect();
            sids.sort_unstable();
            sids.dedup();
            (path, sids)
        })
        .collect();
    json!({ "path_to_session_ids": by_path })
}

/// Puts the shell's latency where `command`'s fields have placeholders (`server_stats`'
/// latencies, or `monitor`'s own keys), and for `monitor` the `mntr` rows it adds.
fn with_shell_figures(command: &str, fields: &mut Map<String, Value>, shell: &ShellFigures) {
    let (min, avg, max) = shell.latency_ms;
    let target = match fields.get_mut("server_stats") {
        Some(Value::Object(stats)) => stats,
        _ => &mut *fields,
    };
    target.insert("avg_latency".into(), json!(avg));
    target.insert("min_latency".into(), min.into());
    target.insert("max_latency".into(), max.into());
    if command == "monitor" {
        for (name, value) in &shell.mntr_rows {
            let value = match *value {
                Figure::Whole(v) => Value::from(v),
                Figure::Mean(v) => json!(zk_round(v)),
            };
            target.insert(name.clone(), value);
        }
    }
}

/// `monitor`: the numbers the `mntr` word prints, under its names without the `zk_` prefix.
/// ZooKeeper 3.8 adds several hundred of its metrics registry's; rzk reports those it has.
fn monitor(core: &Core, now: Now) -> Value {
    let g = Gauges::of(core, now);
    let mut m = Map::new();
    m.insert("version".into(), version_line().into());
    m.insert("server_state".into(), "standalone".into());
    for (name, value) in g.named() {
        m.insert(name.into(), value.into());
    }
    m.insert("avg_latency".into(), json!(0.0));
    m.insert("min_latency".into(), 0.into());
    m.insert("max_latency".into(), 0.into());
    m.insert("local_sessions".into(), 0.into());
    Value::Object(m)
}

/// `environment`: ZooKeeper's keys. The JVM's have no meaning in rzk: `"<NA>"`, ZooKeeper's
/// value for what it cannot tell.
fn environment() -> Value {
    const NA: &str = "<NA>";
    let read = |path: &str| {
        std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_else(|_| NA.into())
    };
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| NA.into());
    let cwd = std::env::current_dir().map_or_else(|_| NA.into(), |d| d.display().to_string());
    json!({
        "zookeeper.version": version_line(),
        "host.name": read("/proc/sys/kernel/hostname"),
        "java.version": NA,
        "java.vendor": NA,
        "java.home": NA,
        "java.class.path": NA,
        "java.library.path": NA,
        "java.io.tmpdir": std::env::temp_dir().display().to_string(),
        "java.compiler": NA,
        "os.name": std::env::consts::OS,
        "os.arch": std::env::consts::ARCH,
        "os.version": read("/proc/sys/kernel/osrelease"),
        "user.name": var("USER"),
        "user.home": var("HOME"),
        "user.dir": cwd,
        "os.memory.free": NA,
        "os.memory.max": NA,
        "os.memory.total": NA,
    })
}
