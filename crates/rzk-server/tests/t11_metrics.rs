//! The Prometheus endpoint: scraped over HTTP, its text parsed, ZooKeeper's metric names with
//! the values the server's own `mntr` reports; the request latencies and the log's fsync and
//! batch figures of a durable server, in the scrape, `mntr` and `srvr`; a client that never
//! finishes its request is cut off while scrapes go on; malformed, oversized, silent,
//! half-sent and dribbling requests are bounded while the client port keeps serving.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rzk_server::{
    AdminConfig, TestServer, HTTP_CONNECTIONS_MAX, HTTP_HEADER_READ_TIMEOUT, HTTP_REQUEST_BYTES_MAX,
};
use rzk_testkit::four_letter::four_letter;
use rzk_testkit::http_abuse::{assert_bounded_while_serving, HttpLimits};
use rzk_testkit::ports::free_port;
use rzk_testkit::tempdir::TempDir;
use zookeeper_client as zk;

/// Generous bound for anything the server should do at once, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(30);

fn server() -> (TestServer, SocketAddr) {
    server_on(TestServer::builder())
}

fn server_on(builder: rzk_server::TestServerBuilder) -> (TestServer, SocketAddr) {
    let metrics: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let server = builder
        .config(|c| {
            c.metrics = Some(metrics);
            c.core.four_letter_words = vec!["*".into()];
        })
        .start()
        .expect("start rzk");
    (server, metrics)
}

/// One HTTP/1.1 request on its own connection: the status line, headers and body as text.
fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: rzk\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The samples of an exposition, by metric name (`_total` kept for counters).
fn samples(response: &str) -> HashMap<String, f64> {
    let (_, body) = response.split_once("\r\n\r\n").expect("headers end");
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("sample {l:?}"));
            (name.to_string(), value.parse().unwrap_or_else(|e| panic!("{l:?}: {e}")))
        })
        .collect()
}

fn mntr_value(addr: SocketAddr, key: &str) -> f64 {
    let text = four_letter(addr, "mntr").unwrap();
    let line = text.lines().find_map(|l| l.strip_prefix(&format!("{key}\t"))).unwrap();
    line.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_reports_zookeeper_names_with_the_values_mntr_reports() {
    let (server, metrics) = server();
    let before = tokio::task::spawn_blocking(move || get(metrics, "/metrics")).await.unwrap();
    assert!(before.starts_with("HTTP/1.1 200"), "{before}");
    assert!(before.to_ascii_lowercase().contains("content-type: application/openmetrics-text"));
    let before = samples(&before);

    let client = zk::Client::connect(&server.connect_string()).await.unwrap();
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    const N: usize = 25;
    for i in 0..N {
        client.create(&format!("/n{i}"), b"0123456789", &open).await.unwrap();
    }
    let _watch = client.get_and_watch_data("/n0").await.unwrap();
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    client.create("/e", b"", &ephemeral).await.unwrap();

    let after = tokio::task::spawn_blocking(move || get(metrics, "/metrics")).await.unwrap();
    let after = samples(&after);
    assert_eq!(after["znode_count"] - before["znode_count"], (N + 1) as f64, "{after:?}");
    assert_eq!(after["ephemerals_count"], 1.0);
    assert_eq!(after["watch_count"], 1.0);
    assert_eq!(after["global_sessions"], 1.0);
    assert_eq!(after["num_alive_connections"], 1.0);
    assert!(after["approximate_data_size"] >= before["approximate_data_size"] + (N * 10) as f64);
    assert!(after["packets_received"] >= (N + 2) as f64, "{after:?}");
    assert_eq!(after["rzk_sessions_expired_total"], 0.0);
    assert_eq!(after["rzk_sasl_auth_failures_total"], 0.0);
    for name in ["outstanding_requests", "packets_sent", "uptime", "rzk_protocol_errors_total"] {
        assert!(after.contains_key(name), "{name} missing: {after:?}");
    }
    let addr = server.addr();
    let from_mntr =
        tokio::task::spawn_blocking(move || mntr_value(addr, "zk_znode_count")).await.unwrap();
    assert_eq!(after["znode_count"], from_mntr, "the scrape and mntr agree");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latencies_and_the_logs_figures_are_reported_by_the_scrape_mntr_and_srvr() {
    let tmp = TempDir::new("rzk-t11-latency");
    let admin: SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let builder = TestServer::builder().data_dir(tmp.join("data"));
    let (server, metrics) = server_on(builder.config(|c| c.admin = Some(AdminConfig::new(admin))));
    let client = zk::Client::connect(&server.connect_string()).await.unwrap();
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    const WRITES: usize = 20;
    const READS: usize = 30;
    for i in 0..WRITES {
        client.create(&format!("/w{i}"), b"x", &open).await.unwrap();
    }
    for i in 0..READS {
        client.get_data(&format!("/w{}", i % WRITES)).await.unwrap();
    }
    let scrape = tokio::task::spawn_blocking(move || get(metrics, "/metrics")).await.unwrap();
    let s = samples(&scrape);
    // The session's creation is a write too, and pings are reads.
    assert!(s["updatelatency_count"] >= WRITES as f64, "{scrape}");
    assert!(s["readlatency_count"] >= READS as f64, "{scrape}");
    assert!(s["readlatency_sum"] > 0.0 && s["updatelatency_sum"] > 0.0, "{scrape}");
    assert!(s["fsynctime_count"] >= 1.0, "{scrape}");
    assert!(s["sync_processor_batch_size_sum"] >= WRITES as f64, "{scrape}");
    assert_eq!(s["readlatency_bucket{le=\"+Inf\"}"], s["readlatency_count"], "{scrape}");
    assert!(s.contains_key("snapshottime_count") && s.contains_key("rzk_output_queued_bytes"));

    // Quiet now (the client sends no request until its next ping, a third of the session
    // timeout away): mntr counts what the scrape counted.
    let addr = server.addr();
    let (cnt, srvr, monitor) = tokio::task::spawn_blocking(move || {
        let monitor = get(admin, "/commands/monitor");
        (mntr_value(addr, "zk_cnt_updatelatency"), four_letter(addr, "srvr").unwrap(), monitor)
    })
    .await
    .unwrap();
    assert_eq!(cnt, s["updatelatency_count"], "mntr and the scrape agree");
    assert!(
        monitor.contains(&format!("\"cnt_updatelatency\": {cnt}")),
        "the AdminServer's monitor agrees: {monitor}"
    );
    let latency = srvr.lines().find_map(|l| l.strip_prefix("Latency min/avg/max: ")).unwrap();
    let parts: Vec<f64> = latency.split('/').map(|v| v.parse().unwrap()).collect();
    // Min and max are whole milliseconds (truncated, as ZooKeeper's clock has them); the
    // average is exact, so it may exceed a max of 0.
    assert!(parts[0] <= parts[2] && parts[1] > 0.0, "{srvr}");
    drop(client);
}

#[test]
fn other_paths_and_methods_are_refused_and_a_slow_client_is_cut_off() {
    let (_server, metrics) = server();
    assert!(get(metrics, "/").starts_with("HTTP/1.1 404"));
    let mut s = TcpStream::connect(metrics).unwrap();
    write!(s, "POST /metrics HTTP/1.1\r\nHost: rzk\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut status = [0; 12];
    s.read_exact(&mut status).unwrap();
    assert_eq!(&status, b"HTTP/1.1 405");

    // Slowloris: half a request line, then nothing. The server closes the connection after
    // its header read timeout; scrapes are answered meanwhile.
    let mut slow = TcpStream::connect(metrics).unwrap();
    slow.set_read_timeout(Some(PATIENCE)).unwrap();
    slow.write_all(b"GET /metr").unwrap();
    let started = Instant::now();
    assert!(get(metrics, "/metrics").starts_with("HTTP/1.1 200"), "served beside the slow one");
    let mut rest = Vec::new();
    let read = slow.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(read.is_ok(), "not closed within {PATIENCE:?}: {read:?}");
    assert!(waited >= HTTP_HEADER_READ_TIMEOUT / 2, "closed after {waited:?}, before its timeout");
}

/// The listener's limits, for the misbehaving clients.
const HTTP_LIMITS: HttpLimits = HttpLimits {
    connections_max: HTTP_CONNECTIONS_MAX,
    header_read_timeout: HTTP_HEADER_READ_TIMEOUT,
    request_bytes_max: HTTP_REQUEST_BYTES_MAX,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_http_on_the_metrics_port_is_bounded_and_the_client_port_keeps_serving() {
    let (server, metrics) = server();
    let client = zk::Client::connect(&server.connect_string()).await.unwrap();
    let read = |_| {
        let client = &client;
        async move { drop(client.get_data("/").await.unwrap()) }
    };
    assert_bounded_while_serving(metrics, HTTP_LIMITS, "/metrics", read).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sasl_logins_are_counted() {
    let users = [("bob".to_owned(), "bob-secret".to_owned())].into_iter().collect();
    let builder = TestServer::builder()
        .config(move |c| c.core.sasl_users = rzk_core::config::SaslUsers(users));
    let (server, metrics) = server_on(builder);
    for password in ["wrong", "also wrong", "bob-secret"] {
        let sasl = zk::SaslOptions::digest_md5("bob", password);
        let _ = zk::Client::connector().with_sasl(sasl).connect(&server.connect_string()).await;
    }
    let after = tokio::task::spawn_blocking(move || get(metrics, "/metrics")).await.unwrap();
    assert_eq!(samples(&after)["rzk_sasl_auth_failures_total"], 2.0);
}
