//! The AdminServer against Apache ZooKeeper 3.8's: after the same writes and watches on both,
//! every command is fetched from both over HTTP and compared field by field (the same keys at
//! every level, the same JSON types, and the values that must agree); then bad HTTP input on
//! rzk's admin port (malformed and oversized requests, slowloris clients silent, half-sent or
//! dribbling) is bounded and leaves the client port serving.

#[cfg(feature = "zookeeper-tests")]
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rzk_server::{
    AdminConfig, DiskConfig, TestServer, HTTP_CONNECTIONS_MAX, HTTP_HEADER_READ_TIMEOUT,
    HTTP_REQUEST_BYTES_MAX,
};
use rzk_testkit::http_abuse::{assert_bounded_while_serving, HttpLimits};
use rzk_testkit::ports::free_port;
use rzk_testkit::tempdir::TempDir;
#[cfg(feature = "zookeeper-tests")]
use rzk_testkit::zookeeper::{Settings, ZooKeeper};
use serde_json::Value;
use zookeeper_client as zk;

/// Generous bound for anything a server should do at once, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(30);
const TICK_MS: u32 = 2000;

/// Every command rzk serves, by a name or alias ZooKeeper 3.8 also knows.
#[cfg(feature = "zookeeper-tests")]
const COMMANDS: &[&str] = &[
    "ruok",
    "srvr",
    "server_stats",
    "stat",
    "stats",
    "mntr",
    "monitor",
    "conf",
    "config",
    "configuration",
    "cons",
    "connections",
    "envi",
    "env",
    "environment",
    "wchs",
    "watch_summary",
    "wchc",
    "watches",
    "wchp",
    "watches_by_path",
    "dump",
    "is_read_only",
    "isro",
    "dirs",
    "crst",
    "connection_stat_reset",
    "srst",
    "stat_reset",
    "lead",
    "leader",
    "obsr",
    "observers",
    "voting_view",
    "zabstate",
    "hash",
    "initial_configuration",
    "icfg",
    "last_snapshot",
    "lsnp",
    "system_properties",
    "sysp",
    "get_trace_mask",
    "gtmk",
    "set_trace_mask",
    "stmk",
    "observer_connection_stat_reset",
    "orst",
];

/// Commands whose keys are ZooKeeper's JVM and metrics registry: rzk has a subset of them.
#[cfg(feature = "zookeeper-tests")]
const SUBSET: &[&str] = &["monitor", "system_properties"];

/// The zoo.cfg text rzk reports as its initial configuration in these tests.
const RZK_CFG: &str = "tickTime=2000\nadmin.enableServer=true\n";

/// Fields whose keys are data (session ids, expiry times): the two servers' keys differ, so
/// their entries are compared by count and by the shape of their values.
#[cfg(feature = "zookeeper-tests")]
const DATA_KEYED: &[&str] =
    &["session_id_to_watched_paths", "expiry_time_to_session_ids", "session_id_to_ephemeral_paths"];

/// One HTTP/1.1 request on its own connection: (status, body).
fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: zk\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn command(addr: SocketAddr, name: &str) -> Value {
    let (status, body) = http(addr, "GET", &format!("/commands/{name}"));
    assert_eq!(status, 200, "{name} on {addr}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{name} on {addr}: {e}: {body}"))
}

#[cfg(feature = "zookeeper-tests")]
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Asserts that `rzk` has `zk`'s shape: the same keys at every level (a subset of them if
/// `subset`), the same JSON types, arrays as long as ZooKeeper's with elements shaped like
/// its first one.
#[cfg(feature = "zookeeper-tests")]
fn same_shape(at: &str, rzk: &Value, zk: &Value, subset: bool) {
    assert_eq!(kind(rzk), kind(zk), "{at}: rzk {rzk} vs ZooKeeper {zk}");
    match (rzk, zk) {
        (Value::Object(r), Value::Object(z)) => {
            let data_keyed = DATA_KEYED.iter().any(|k| at.ends_with(k));
            if data_keyed {
                // ZooKeeper's ExpiryQueue empties a session's old bucket when the session is
                // touched and drops the bucket only when its time comes: an empty bucket is
                // a moment of ZooKeeper's, not a shape.
                let filled = |o: &serde_json::Map<String, Value>| -> Vec<Value> {
                    o.values()
                        .filter(|v| v.as_array().is_none_or(|a| !a.is_empty()))
                        .cloned()
                        .collect()
                };
                let (r, z) = (filled(r), filled(z));
                assert_eq!(r.len(), z.len(), "{at}: entries: rzk {rzk} vs ZooKeeper {zk}");
                for (rv, zv) in r.iter().zip(z.iter()) {
                    same_shape(&format!("{at}.*"), rv, zv, false);
                }
                return;
            }
            let (rk, zk_keys): (BTreeSet<_>, BTreeSet<_>) =
                (r.keys().collect(), z.keys().collect());
            if subset {
                let extra: Vec<_> = rk.difference(&zk_keys).collect();
                assert!(extra.is_empty(), "{at}: keys ZooKeeper lacks: {extra:?}");
            } else {
                assert_eq!(rk, zk_keys, "{at}: keys");
            }
            for (k, rv) in r {
                same_shape(&format!("{at}.{k}"), rv, &z[k], false);
            }
        }
        (Value::Array(r), Value::Array(z)) => {
            // Both servers have the same one client, paths and watches: the same counts.
            assert_eq!(r.len(), z.len(), "{at}: rzk {rzk} vs ZooKeeper {zk}");
            if let Some(z0) = z.first() {
                for rv in r {
                    same_shape(&format!("{at}[]"), rv, z0, false);
                }
            }
        }
        _ => {}
    }
}

/// The same writes and watches on a server: two persistent nodes, an ephemeral, and a data,
/// a child and an exists watch. Returns the client, whose session must stay open.
#[cfg(feature = "zookeeper-tests")]
async fn populate(hosts: &str) -> (zk::Client, Vec<zk::OneshotWatcher>) {
    let client = zk::Client::connect(hosts).await.unwrap();
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client.create("/a", b"0123456789", &open).await.unwrap();
    client.create("/a/b", b"", &open).await.unwrap();
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    client.create("/e", b"", &ephemeral).await.unwrap();
    let (_, _, w1) = client.get_and_watch_data("/a").await.unwrap();
    let (_, _, w2) = client.get_and_watch_children("/a").await.unwrap();
    let (_, w3) = client.check_and_watch_stat("/a/b").await.unwrap();
    (client, vec![w1, w2, w3])
}

fn rzk_with_admin() -> (TestServer, SocketAddr) {
    let admin: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let server = TestServer::builder()
        .tick_ms(TICK_MS)
        .config(|c| {
            c.admin = Some(AdminConfig::new(admin));
            c.max_client_connections_per_ip = 0;
            c.initial_configuration = Some(RZK_CFG.into());
        })
        .start()
        .expect("start rzk");
    (server, admin)
}

#[cfg(feature = "zookeeper-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_has_zookeepers_shape_and_the_values_that_must_agree() {
    let dir = TempDir::new("rzk-admin-zk");
    let zk_admin: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let extra = format!(
        "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={}\n",
        zk_admin.port()
    );
    let settings = Settings { tick_ms: TICK_MS, container_check_ms: 60_000 };
    let path = dir.path().to_path_buf();
    let zookeeper =
        tokio::task::spawn_blocking(move || ZooKeeper::start_with(&path, &settings, &extra))
            .await
            .unwrap();
    let (rzk, rzk_admin) = rzk_with_admin();
    let (_zk_client, _zk_watches) = populate(&zookeeper.hosts()).await;
    let (_rzk_client, _rzk_watches) = populate(&rzk.connect_string()).await;

    tokio::task::spawn_blocking(move || compare(rzk_admin, zk_admin)).await.unwrap();
    drop(zookeeper);
}

#[cfg(feature = "zookeeper-tests")]
fn compare(rzk: SocketAddr, zk: SocketAddr) {
    for name in COMMANDS {
        let (r, z) = (command(rzk, name), command(zk, name));
        assert_eq!(r["command"], z["command"], "{name}: the command's own name");
        let subset = SUBSET.iter().any(|c| z["command"] == *c);
        same_shape(name, &r, &z, subset);
    }
    // monitor: ZooKeeper 3.8 adds its whole metrics registry; rzk has mntr's rows.
    let monitor = command(rzk, "monitor");
    for key in ["znode_count", "ephemerals_count", "watch_count", "global_sessions", "uptime"] {
        assert!(monitor.get(key).is_some(), "monitor lacks {key}: {monitor}");
    }
    // Values that must agree after the same writes.
    let agree = |name: &str, pointer: &str| {
        let (r, z) = (command(rzk, name), command(zk, name));
        assert_eq!(r.pointer(pointer), z.pointer(pointer), "{name}{pointer}");
    };
    for (name, pointer) in [
        ("ruok", "/error"),
        ("is_read_only", "/read_only"),
        ("srvr", "/node_count"),
        ("srvr", "/read_only"),
        ("srvr", "/server_stats/server_state"),
        ("srvr", "/server_stats/num_alive_client_connections"),
        ("mntr", "/znode_count"),
        ("mntr", "/ephemerals_count"),
        ("mntr", "/global_sessions"),
        ("mntr", "/server_state"),
        ("conf", "/tick_time"),
        ("conf", "/min_session_timeout"),
        ("conf", "/max_session_timeout"),
        ("conf", "/max_client_cnxns"),
        ("conf", "/server_id"),
        ("conf", "/client_port_listen_backlog"),
        ("wchs", "/num_connections"),
        ("wchs", "/num_paths"),
        ("leader", "/error"),
        ("zabstate", "/zabstate"),
    ] {
        agree(name, pointer);
    }
    let paths = |addr| command(addr, "wchp")["path_to_session_ids"].as_object().unwrap().len();
    assert_eq!(paths(rzk), paths(zk), "watched paths");
    let (r, z) = (command(rzk, "wchp"), command(zk, "wchp"));
    let keys = |v: &Value| v["path_to_session_ids"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys(&r) as BTreeSet<String>, keys(&z), "watched paths");
    let ephemerals = |v: Value| v["session_id_to_ephemeral_paths"].as_object().unwrap().clone();
    let (r, z) = (ephemerals(command(rzk, "dump")), ephemerals(command(zk, "dump")));
    assert_eq!(r.values().collect::<Vec<_>>(), z.values().collect::<Vec<_>>(), "ephemerals");
    compare_host_commands(rzk, zk);
    compare_http(rzk, zk);
}

/// The commands answered from the host and the configuration, where rzk has no counterpart
/// of ZooKeeper's state or answers it in ZooKeeper's terms.
#[cfg(feature = "zookeeper-tests")]
fn compare_host_commands(rzk: SocketAddr, zk: SocketAddr) {
    let (r, z) = (command(rzk, "system_properties"), command(zk, "system_properties"));
    // Both run on this host, ZooKeeper from the test's working directory.
    let host = ["file.separator", "line.separator", "path.separator", "os.name", "os.arch"];
    for key in host.into_iter().chain(["os.version", "user.dir"]) {
        assert_eq!(r.get(key), z.get(key), "system_properties {key}");
    }
    assert_eq!(command(rzk, "icfg")["initial_configuration"], RZK_CFG);
    let zk_cfg = command(zk, "icfg")["initial_configuration"].as_str().unwrap().to_string();
    assert!(zk_cfg.contains("admin.enableServer=true"), "ZooKeeper's own zoo.cfg: {zk_cfg}");
    // No digest and no trace in rzk: what ZooKeeper answers with neither.
    assert_eq!(command(rzk, "hash")["digests"], serde_json::json!([]));
    assert_eq!(command(rzk, "gtmk")["tracemask"], 0);
    // rzk in memory has no snapshot: ZooKeeper's answer without one.
    let lsnp = command(rzk, "lsnp");
    assert_eq!(
        (lsnp["zxid"].as_str(), lsnp["timestamp"].as_i64()),
        (Some("ffffffffffffffff"), Some(-1))
    );
    // set_trace_mask's argument is checked as ZooKeeper checks it; a valid one leaves rzk's
    // mask at 0.
    for query in ["", "?traceMask=abc", "?traceMask=", "?other=1", "?traceMask=1.5"] {
        let name = format!("stmk{query}");
        assert_eq!(command(rzk, &name), command(zk, &name), "{name}");
    }
    let (r, z) = (command(rzk, "stmk?traceMask=306"), command(zk, "stmk?traceMask=306"));
    same_shape("stmk", &r, &z, false);
    assert_eq!((r["tracemask"].clone(), r["error"].clone()), (0.into(), Value::Null), "{r}");
    assert_eq!(command(rzk, "gtmk")["tracemask"], 0, "the mask is unchanged");
}

/// The command list, unknown commands, other paths and methods.
#[cfg(feature = "zookeeper-tests")]
fn compare_http(rzk: SocketAddr, zk: SocketAddr) {
    for name in ["nosuch", "RUOK", "ruok/extra"] {
        assert_eq!(command(rzk, name), command(zk, name), "unknown command {name:?}");
    }
    let links = |addr| {
        let (status, body) = http(addr, "GET", "/commands");
        assert_eq!(status, 200);
        body.lines().filter(|l| l.starts_with("<a href=")).map(str::to_string).collect()
    };
    let (r, z): (BTreeSet<String>, BTreeSet<String>) = (links(rzk), links(zk));
    assert!(r.is_subset(&z), "links ZooKeeper lacks: {:?}", r.difference(&z));
    assert!(z.is_subset(&r), "links missing from rzk's list: {:?}", z.difference(&r));
    // Each listed command is served, not answered as unknown.
    for link in &r {
        let name = link.split('>').nth(1).and_then(|n| n.strip_suffix("</a")).unwrap();
        assert_eq!(command(rzk, name)["command"], *name, "{link}");
    }
    assert_eq!(http(rzk, "GET", "/commands/").0, 200);
    for (method, path) in [("POST", "/commands/ruok"), ("DELETE", "/commands"), ("GET", "/nope")] {
        assert_eq!(http(rzk, method, path).0, http(zk, method, path).0, "{method} {path}");
    }
}

/// The listener's limits, for the misbehaving clients.
const HTTP_LIMITS: HttpLimits = HttpLimits {
    connections_max: HTTP_CONNECTIONS_MAX,
    header_read_timeout: HTTP_HEADER_READ_TIMEOUT,
    request_bytes_max: HTTP_REQUEST_BYTES_MAX,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_http_is_bounded_and_the_client_port_keeps_serving() {
    let (server, admin) = rzk_with_admin();
    let client = zk::Client::connect(&server.connect_string()).await.unwrap();
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let create = |i| {
        let (client, open) = (&client, &open);
        async move {
            client.create(&format!("/n{i}"), b"x", open).await.unwrap();
        }
    };
    assert_bounded_while_serving(admin, HTTP_LIMITS, "/commands/ruok", create).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_snapshot_names_the_newest_snapshot_file() {
    let tmp = TempDir::new("rzk-admin-lsnp");
    let dir = tmp.join("data");
    let mut disk = DiskConfig::new(&dir);
    disk.snap_count = 20;
    let admin: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let server = TestServer::builder()
        .disk(disk)
        .config(|c| c.admin = Some(AdminConfig::new(admin)))
        .start()
        .expect("start rzk");
    let client = zk::Client::connect(&server.connect_string()).await.unwrap();
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for i in 0..200 {
        client.create(&format!("/n{i}"), b"x", &open).await.unwrap();
    }
    let newest = || {
        let names = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name());
        let snaps = names.filter_map(|n| n.to_str()?.strip_prefix("snapshot.").map(String::from));
        snaps.filter(|hex| hex.len() == 16).max()
    };
    let started = Instant::now();
    let hex = loop {
        if let Some(hex) = newest() {
            break hex;
        }
        assert!(started.elapsed() < PATIENCE, "no snapshot written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let lsnp = tokio::task::spawn_blocking(move || command(admin, "lsnp")).await.unwrap();
    // A newer snapshot may have landed between the listing and the command.
    let zxid = i64::from_str_radix(lsnp["zxid"].as_str().unwrap(), 16).unwrap();
    assert!(zxid >= i64::from_str_radix(&hex, 16).unwrap(), "{lsnp} vs snapshot.{hex}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let age = now.as_secs() as i64 - lsnp["timestamp"].as_i64().unwrap();
    assert!((0..600).contains(&age), "timestamp {lsnp} is not the file's time");
}

/// A handler mounted on the AdminServer's port (the console) gets its path's requests, any
/// method, with the mount's path taken off and the query kept; the commands keep theirs; a
/// second mount, or one over the commands, is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_handler_serves_beside_the_commands() {
    use http_body_util::{BodyExt as _, Full};
    let admin: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let mut config = rzk_server::ServerConfig::new(([127, 0, 0, 1], 0).into());
    config.admin = Some(AdminConfig::new(admin));
    let server = rzk_server::Server::start(config).await.unwrap();
    // Before anything is mounted, the path is nobody's.
    let before = tokio::task::spawn_blocking(move || http(admin, "GET", "/ui/x"));
    assert_eq!(before.await.unwrap().0, 404);
    let echo: rzk_server::HttpHandler = std::sync::Arc::new(|req| {
        let seen = format!("{} {}", req.method(), req.uri());
        let body = Full::new(seen.into()).map_err(|never| match never {}).boxed_unsync();
        Box::pin(std::future::ready(hyper::Response::new(body)))
    });
    for refused in ["/commands", "/commands/ui", "/", "ui", "/ui/"] {
        assert!(server.mount_admin(refused, echo.clone()).is_err(), "{refused}");
    }
    server.mount_admin("/ui", echo.clone()).unwrap();
    assert!(server.mount_admin("/other", echo).is_err(), "a second mount");
    let answers = tokio::task::spawn_blocking(move || {
        (
            http(admin, "GET", "/ui/tree?path=/a"),
            http(admin, "POST", "/ui/set"),
            http(admin, "GET", "/ui"),
            http(admin, "GET", "/uix"),
            http(admin, "GET", "/commands/ruok"),
        )
    });
    let (tree, set, bare, beside, ruok) = answers.await.unwrap();
    assert_eq!(tree, (200, "GET /tree?path=/a".to_string()));
    assert_eq!(set, (200, "POST /set".to_string()));
    assert_eq!(bare.0, 308, "the mount's own path sends the browser under it");
    assert_eq!(beside.0, 404, "a path that only starts with the mount's is not under it");
    let ruok: Value = serde_json::from_str(&ruok.1).unwrap();
    assert_eq!(ruok["command"], "ruok", "the commands keep their paths");
    server.shutdown().await;
}
