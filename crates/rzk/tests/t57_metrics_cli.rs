//! `rzk elect --metrics-port` and `rzk lock --metrics-port` against the in-process server and
//! Apache ZooKeeper: scraped while leading, the endpoint shows the term held and started and
//! the command running; after the holder's network is cut, the loss reason counted, the term
//! no longer held and one loss-to-stopped time recorded.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rzk_testkit::proxy::Proxy;
use support::{Kind, Server};

/// How long anything here may take on a loaded machine.
const LIMIT: Duration = Duration::from_secs(20);

both_servers! {
    elect_metrics => elect_metrics_show_the_term_and_its_loss;
    lock_metrics => lock_metrics_show_the_hold_and_its_loss;
}

/// A running supervising command, killed when dropped; its stderr lines arrive on `lines`.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `rzk --connect cs ARGS --metrics-port 0 ... -- sleep 1000` (whose watchdog stops
/// the sleep when rzk dies).
fn start(cs: &str, args: &[&str]) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", cs])
        .args(args)
        .args(["--session-timeout-ms", "2000", "--grace-ms", "100", "--metrics-port", "0"])
        .args(["--", "sleep", "1000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Running { child, lines }
}

/// The endpoint's address, from the line the command prints at start.
fn metrics_addr(r: &Running) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = r.lines.recv_timeout(left).expect("no metrics address printed");
        if let Some(url) = line.split("metrics at http://").nth(1) {
            return url.trim_end_matches("/metrics").to_string();
        }
    }
}

/// One GET of /metrics: the body.
fn scrape(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: rzk\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text.split("\r\n\r\n").nth(1).unwrap_or_default().to_string()
}

/// The sum of the samples of `name` whose labels contain every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name).is_some_and(|rest| rest.starts_with(['{', ' ']))
                && labels.iter().all(|want| l.contains(want))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Scrapes until `ok` holds for the text; returns it.
fn scrape_until(addr: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        let text = scrape(addr);
        if ok(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what} not within {LIMIT:?}:\n{text}");
        thread::sleep(Duration::from_millis(50));
    }
}

fn elect_metrics_show_the_term_and_its_loss(kind: Kind) {
    let s = Server::start(kind);
    let proxy = Proxy::start(s.hosts());
    let path = format!("/m/elect-{kind:?}");
    let labels = ["recipe=\"leader_latch\"", &format!("path=\"{path}\"")];
    let r = start(&proxy.hosts(), &["elect", &path, "--id", "a"]);
    let addr = metrics_addr(&r);
    let leading = scrape_until(&addr, "leading", |t| {
        sample(t, "rzk_recipes_holding", &labels) == 1.0
            && sample(t, "rzk_cli_child_running", &[]) == 1.0
    });
    assert_eq!(sample(&leading, "rzk_recipes_terms_started_total", &labels), 1.0, "{leading}");
    assert_eq!(sample(&leading, "rzk_recipes_terms_ended_total", &labels), 0.0, "{leading}");

    assert_loss_after_blackhole(&proxy, &addr, &labels);
}

/// Cuts the holder off at `proxy` and scrapes `addr` until the command is stopped: the term
/// of `labels` ended once, by a suspension or its lease running out (whichever the recipe
/// sees first), held no more, its duration and one loss-to-stopped time recorded.
fn assert_loss_after_blackhole(proxy: &Proxy, addr: &str, labels: &[&str]) {
    proxy.blackhole();
    let lost = scrape_until(addr, "the loss", |t| {
        sample(t, "rzk_cli_loss_to_child_stopped_seconds_count", &[]) == 1.0
    });
    let by_reason = |reason: &str| {
        let reason = format!("reason=\"{reason}\"");
        let with: Vec<&str> = labels.iter().copied().chain([reason.as_str()]).collect();
        sample(&lost, "rzk_recipes_terms_ended_total", &with)
    };
    let ended = sample(&lost, "rzk_recipes_terms_ended_total", labels);
    assert_eq!(ended, 1.0, "{lost}");
    assert_eq!(by_reason("suspended") + by_reason("lease_expired"), 1.0, "{lost}");
    assert_eq!(sample(&lost, "rzk_recipes_holding", labels), 0.0, "{lost}");
    assert_eq!(sample(&lost, "rzk_cli_child_running", &[]), 0.0, "{lost}");
    assert_eq!(sample(&lost, "rzk_recipes_term_duration_seconds_count", labels), 1.0, "{lost}");
}

fn lock_metrics_show_the_hold_and_its_loss(kind: Kind) {
    let s = Server::start(kind);
    let proxy = Proxy::start(s.hosts());
    let path = format!("/m/lock-{kind:?}");
    let labels = ["recipe=\"mutex\"", &format!("path=\"{path}\"")];
    let r = start(&proxy.hosts(), &["lock", &path]);
    let addr = metrics_addr(&r);
    let held = scrape_until(&addr, "holding", |t| {
        sample(t, "rzk_recipes_holding", &labels) == 1.0
            && sample(t, "rzk_cli_child_running", &[]) == 1.0
    });
    assert_eq!(sample(&held, "rzk_recipes_terms_started_total", &labels), 1.0, "{held}");
    assert!(sample(&held, "rzk_recipes_evaluations_total", &labels) >= 1.0, "{held}");
    assert_loss_after_blackhole(&proxy, &addr, &labels);
}
