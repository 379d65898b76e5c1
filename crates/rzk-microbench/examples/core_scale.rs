//! Session scale of the core, measured in process: N simulated sessions, each with its own
//! connection, one ephemeral node `/registry/s-<i>` and one watch on it, driven through
//! [`Core`] with no sockets, so no fd limit bounds N and the numbers are the core's own.
//!
//! ```text
//! cargo run --release -p rzk-microbench --example core_scale -- --sessions 100000
//! ```
//!
//! Prints one JSON line on stdout; progress and failed sanity checks go to stderr.
//!
//! Phases, on a virtual clock (t0 = setup, T = the session timeout):
//! - setup at t0: `/registry`, observers (a persistent recursive watch on it), then the N
//!   sessions. `--persistent-pct` of them watch their node with addWatch (PERSISTENT), the rest
//!   with exists or getData (one-shot).
//! - idle tick: `tick` when nothing is due, median of 1000 calls (Instant's own cost included).
//! - ping pass: one ping per connection, the expiry group at t0+T/2, everyone else at
//!   t0+3T/4. A ping only moves the deadline in the session record, so every expiry entry
//!   goes stale.
//! - refile tick at t0+T+1: pops every stale entry and files it at its true deadline; this is
//!   what time costs a server whose clients all ping.
//! - expiry: the expiry group's connections close; one tick at t0+3T/2+1 expires exactly them
//!   (everyone else is due at t0+7T/4), and draining its output delivers one NodeDeleted per
//!   expired session to each observer.

#![forbid(unsafe_code)]

use std::fmt::Display;
use std::net::SocketAddr;
use std::time::Instant;

use rzk_core::{Config, ConnId, Core, Now, Output};
use rzk_microbench::{body, create, now, settle};
use rzk_proto::jute::Writer;
use rzk_proto::{xid, ConnectRequest, CreateMode, PathWatch, Request};

const USAGE: &str = "usage: core_scale [--sessions N] [--expire N] [--persistent-pct P] \
                     [--session-timeout-ms T] [--observers K]";

/// Settle this often during the passes over all sessions, so queued replies and transactions
/// do not pile up and count as per-session memory.
const SETTLE_EVERY: usize = 1024;

/// The run's shape, from the command line.
struct Args {
    sessions: usize,
    /// Sessions whose connections close and which then expire (at most `sessions`).
    expire: usize,
    /// Percentage of sessions whose watch is persistent rather than one-shot.
    persistent_pct: usize,
    timeout_ms: i32,
    /// Connections with a persistent recursive watch on `/registry`.
    observers: usize,
}

fn usage_exit(msg: &str) -> ! {
    eprintln!("core_scale: {msg}\n{USAGE}");
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        sessions: 100_000,
        expire: 100_000,
        persistent_pct: 50,
        timeout_ms: 30_000,
        observers: 4,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        if arg == "--help" || arg == "-h" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let Some(value) = inline.or_else(|| it.next()) else {
            usage_exit(&format!("{name} needs a value"))
        };
        let n: usize =
            value.parse().unwrap_or_else(|_| usage_exit(&format!("{name}: not a count: {value}")));
        match name.as_str() {
            "--sessions" => a.sessions = n,
            "--expire" => a.expire = n,
            "--persistent-pct" => a.persistent_pct = n.min(100),
            "--session-timeout-ms" => {
                a.timeout_ms = i32::try_from(n).unwrap_or_else(|_| usage_exit("timeout too large"))
            }
            "--observers" => a.observers = n,
            _ => usage_exit(&format!("unknown flag {name}")),
        }
    }
    if a.sessions == 0 {
        usage_exit("--sessions must be at least 1");
    }
    // The phases' deadlines are T/2 and T/4 apart; below this they would run together.
    if a.timeout_ms < 100 {
        usage_exit("--session-timeout-ms must be at least 100");
    }
    a.expire = a.expire.min(a.sessions);
    a
}

/// The fixtures' clock at `mono_ms`, wall time moving with it.
fn at(mono_ms: u64) -> Now {
    let base = now();
    Now { mono_ms, wall_ms: base.wall_ms + (mono_ms - base.mono_ms) as i64 }
}

/// Session `i` (from 0) speaks on connection `i + 1`; the admin and the observers follow. So the
/// expiry group (the first `expire` sessions) is `1..=expire` and every connection is
/// `1..=last_conn`.
fn session_conn(i: usize) -> ConnId {
    i as ConnId + 1
}

fn admin_conn(a: &Args) -> ConnId {
    a.sessions as ConnId + 1
}

fn observer_conn(a: &Args, k: usize) -> ConnId {
    admin_conn(a) + 1 + k as ConnId
}

fn last_conn(a: &Args) -> ConnId {
    admin_conn(a) + a.observers as ConnId
}

fn is_persistent(a: &Args, i: usize) -> bool {
    // Interleaved, so that any prefix (the expiry group) has both kinds in proportion.
    i % 100 < a.persistent_pct
}

fn config(a: &Args) -> Config {
    let mut c = Config::with_tick_ms(2_000);
    // Grant exactly the timeout asked for, whatever the tick's bounds would say.
    c.session_timeout_ms_min = a.timeout_ms;
    c.session_timeout_ms_max = a.timeout_ms;
    // There are no containers or TTL nodes: keep the reaper out of the ticks measured.
    c.container_check_interval_ms = u64::from(u32::MAX);
    c
}

/// Opens `conn` and sends it a ConnectRequest for a new session.
fn connect(core: &mut Core, conn: ConnId, timeout_ms: i32, now: Now) {
    core.open(conn, SocketAddr::from(([127, 0, 0, 1], 1)));
    let mut w = Writer::new();
    ConnectRequest::new_session(timeout_ms).write(&mut w);
    core.receive(conn, &w.into_inner(), now).expect("connect accepted");
}

fn request(core: &mut Core, conn: ConnId, req: &Request, xid: i32, now: Now) {
    core.receive(conn, &body(req, xid), now).expect("request accepted");
}

/// `/registry`, made by an admin session, and the observers' recursive watches on it. The
/// observers come first so that they also hear every registration, as a real one would.
fn setup_registry(core: &mut Core, a: &Args, t: Now) {
    connect(core, admin_conn(a), a.timeout_ms, t);
    request(core, admin_conn(a), &create("/registry", 0, 0), 1, t);
    for k in 0..a.observers {
        let conn = observer_conn(a, k);
        connect(core, conn, a.timeout_ms, t);
        request(core, conn, &Request::AddWatch { path: "/registry".into(), mode: 1 }, 1, t);
    }
    settle(core);
}

/// The N sessions: connect, create the ephemeral, leave the watch. Returns (seconds, frames).
fn setup_sessions(core: &mut Core, a: &Args, t: Now) -> (f64, usize) {
    let ephemeral = CreateMode::Ephemeral.flags();
    let start = Instant::now();
    let mut frames = 0;
    for i in 0..a.sessions {
        let conn = session_conn(i);
        connect(core, conn, a.timeout_ms, t);
        let path = format!("/registry/s-{i}");
        request(core, conn, &create(&path, 0, ephemeral), 1, t);
        let watch = if is_persistent(a, i) {
            Request::AddWatch { path, mode: 0 }
        } else if i % 2 == 0 {
            Request::Exists(PathWatch { path, watch: true })
        } else {
            Request::GetData(PathWatch { path, watch: true })
        };
        request(core, conn, &watch, 2, t);
        if (i + 1) % SETTLE_EVERY == 0 {
            frames += settle(core);
        }
        if (i + 1) % 100_000 == 0 {
            eprintln!(
                "core_scale: {} sessions set up, {:.1} s",
                i + 1,
                start.elapsed().as_secs_f64()
            );
        }
    }
    frames += settle(core);
    (start.elapsed().as_secs_f64(), frames)
}

/// What the core holds after setup, by its own counts, checked against what was made.
fn report_population(core: &Core, a: &Args, json: &mut Json, checks: &mut Checks) {
    let ephemerals = core.state().ephemeral_count();
    let live = core.live_sessions().count();
    let (watch_conns, watch_paths, watches) = core.watches().counts();
    let persistent = (0..a.sessions).filter(|&i| is_persistent(a, i)).count();
    checks.eq("ephemerals", ephemerals, a.sessions);
    checks.eq("live sessions", live, a.sessions + 1 + a.observers);
    // A persistent watch is an entry in both tables (data and child events); one-shot and
    // recursive watches are one entry each.
    checks.eq("watch entries", watches, a.sessions + persistent + a.observers);
    json.num("ephemerals", ephemerals)
        .num("live_sessions", live)
        .num("connections", core.connection_count())
        .num("persistent_watchers", persistent)
        .num("watch_conns", watch_conns)
        .num("watch_paths", watch_paths)
        .num("watches", watches);
}

/// Tick costs: idle, then a ping on every connection and the tick that re-files every
/// session's stale expiry entry.
fn measure_ticks(core: &mut Core, a: &Args, json: &mut Json, checks: &mut Checks) {
    let (t0, t) = (now().mono_ms, a.timeout_ms as u64);
    let mut samples: Vec<u64> = Vec::with_capacity(1000);
    for _ in 0..1000 {
        let start = Instant::now();
        core.tick(at(t0 + 1));
        samples.push(start.elapsed().as_nanos() as u64);
    }
    samples.sort_unstable();
    json.num("tick_idle_ns_median", samples[samples.len() / 2]);

    // One encoded ping for all: the pass measures the core, not the encoder.
    let ping = body(&Request::Ping, xid::PING);
    let (early, late) = (at(t0 + t / 2), at(t0 + t * 3 / 4));
    let conns = last_conn(a) as usize;
    let group_end = a.expire as ConnId;
    let start = Instant::now();
    let mut frames = 0;
    for conn in 1..=last_conn(a) {
        let when = if conn <= group_end { early } else { late };
        core.receive(conn, &ping, when).expect("ping accepted");
        if conn as usize % SETTLE_EVERY == 0 {
            frames += settle(core);
        }
    }
    frames += settle(core);
    let ping_s = start.elapsed().as_secs_f64();
    checks.eq("ping replies", frames, conns);

    let expired_before = core.counters().sessions_expired;
    let start = Instant::now();
    core.tick(at(t0 + t + 1));
    let refile_s = start.elapsed().as_secs_f64();
    checks.eq("frames after the refile tick", settle(core), 0);
    let expired = (core.counters().sessions_expired - expired_before) as usize;
    checks.eq("sessions expired by the refile tick", expired, 0);
    json.secs("ping_pass_s", ping_s)
        .num("ping_ns_per_session", ns_per(ping_s, conns))
        .secs("refile_tick_s", refile_s)
        .num("refile_tick_ns_per_session", ns_per(refile_s, conns));
}

/// Closes the expiry group's connections, then times the tick that expires their sessions and
/// the drain of what it emits, counting the notifications by destination.
fn measure_expiry(core: &mut Core, a: &Args, json: &mut Json, checks: &mut Checks) {
    let (t0, t) = (now().mono_ms, a.timeout_ms as u64);
    let group_end = a.expire as ConnId;
    let start = Instant::now();
    for conn in 1..=group_end {
        core.closed(conn);
    }
    let close_s = start.elapsed().as_secs_f64();

    let expired_before = core.counters().sessions_expired;
    // Past the expiry group's deadline (pinged at t0+T/2), before everyone else's (t0+3T/4).
    let start = Instant::now();
    core.tick(at(t0 + t / 2 + t + 1));
    let tick_s = start.elapsed().as_secs_f64();

    // `settle` by hand, to tell the observers' frames from the rest.
    let start = Instant::now();
    let last = core.state().last_zxid();
    core.mark_durable(last);
    let txns = core.drain_txns().count();
    let first_observer = observer_conn(a, 0);
    let (mut to_observers, mut to_others, mut closes) = (0usize, 0usize, 0usize);
    while let Some(out) = core.poll_output() {
        match out {
            Output::Send { conn, .. } if conn >= first_observer => to_observers += 1,
            Output::Send { .. } => to_others += 1,
            Output::Close { .. } => closes += 1,
        }
    }
    let settle_s = start.elapsed().as_secs_f64();

    let expired = (core.counters().sessions_expired - expired_before) as usize;
    let expected = a.expire * a.observers;
    checks.eq("sessions expired", expired, a.expire);
    checks.eq("close-session transactions", txns, a.expire);
    checks.eq("observer notifications", to_observers, expected);
    checks.eq("ephemerals left", core.state().ephemeral_count(), a.sessions - a.expire);
    json.num("expire", a.expire)
        .secs("close_s", close_s)
        .secs("expire_tick_s", tick_s)
        .secs("expire_settle_s", settle_s)
        .secs("expire_s", tick_s + settle_s)
        .num("expire_ns_per_session", ns_per(tick_s + settle_s, a.expire))
        .num("sessions_expired", expired)
        .num("notifications", to_observers + to_others)
        .num("observer_notifications", to_observers)
        .num("observer_notifications_expected", expected)
        .num("closes", closes);
}

fn main() {
    let a = parse_args();
    let mut json = Json::default();
    let mut checks = Checks::default();
    json.num("sessions", a.sessions)
        .num("persistent_pct", a.persistent_pct)
        .num("observers", a.observers)
        .num("session_timeout_ms", a.timeout_ms);

    let t0 = at(now().mono_ms);
    let mut core = Core::new(config(&a), t0);
    setup_registry(&mut core, &a, t0);
    let rss_before = status_kib("VmRSS");
    let (setup_s, setup_frames) = setup_sessions(&mut core, &a, t0);
    let rss_after = status_kib("VmRSS");
    // Per session: the connect, create and watch replies, and one NodeCreated per observer.
    checks.eq("setup frames", setup_frames, a.sessions * (3 + a.observers));
    let bytes_per_session = rss_after.saturating_sub(rss_before) * 1024 / a.sessions as u64;
    json.num("rss_kib_before", rss_before)
        .num("rss_kib_after", rss_after)
        .num("bytes_per_session", bytes_per_session)
        .secs("setup_s", setup_s)
        .num("setup_ns_per_session", ns_per(setup_s, a.sessions));
    // After the RSS reading: counting the watches builds a set of every watched path.
    report_population(&core, &a, &mut json, &mut checks);

    eprintln!("core_scale: measuring ticks");
    measure_ticks(&mut core, &a, &mut json, &mut checks);
    eprintln!("core_scale: expiring {} sessions", a.expire);
    measure_expiry(&mut core, &a, &mut json, &mut checks);

    json.num("rss_kib_after_expiry", status_kib("VmRSS"))
        .num("rss_kib_peak", status_kib("VmHWM"))
        .num("checks_failed", checks.0);
    println!("{}", json.line());
}

/// A `kB` field of /proc/self/status (`VmRSS`, `VmHWM`); 0 where there is none (not Linux).
fn status_kib(field: &str) -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return 0 };
    status
        .lines()
        .find_map(|l| {
            let v = l.strip_prefix(field)?.strip_prefix(':')?.trim().strip_suffix("kB")?;
            v.trim().parse::<u64>().ok()
        })
        .unwrap_or(0)
}

fn ns_per(secs: f64, n: usize) -> String {
    format!("{:.1}", secs * 1e9 / n.max(1) as f64)
}

/// Expected-versus-measured checks. A failure is reported (stderr and `checks_failed`) rather
/// than fatal, so that a run of many minutes still prints its numbers.
#[derive(Default)]
struct Checks(usize);

impl Checks {
    fn eq(&mut self, what: &str, got: usize, want: usize) {
        if got != want {
            eprintln!("core_scale: check failed: {what}: got {got}, want {want}");
            self.0 += 1;
        }
    }
}

/// One flat JSON object of numbers, in the order the fields are added.
#[derive(Default)]
struct Json(Vec<String>);

impl Json {
    fn num(&mut self, key: &str, v: impl Display) -> &mut Self {
        self.0.push(format!("\"{key}\":{v}"));
        self
    }

    fn secs(&mut self, key: &str, secs: f64) -> &mut Self {
        self.num(key, format!("{secs:.6}"))
    }

    fn line(&self) -> String {
        format!("{{{}}}", self.0.join(","))
    }
}
