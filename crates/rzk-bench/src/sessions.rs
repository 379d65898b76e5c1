//! The sessions workload: as many sessions as one process may hold, each as a registered
//! service instance is: an ephemeral node `<registry>/s-<pid>-<i>` and a watch on it (a
//! persistent one for `--persistent-pct` of them, a one-shot `exists` re-armed on each event for
//! the rest), pinging at a third of its timeout; `--getters-pct` of them read their node every
//! `--get-interval-ms` (or back to back with 0: one read in flight each). `--observers`
//! sessions watch the whole registry (persistent, recursive) and count its deletions, so that
//! another process's death, its sessions expired, is timed to its last event.
//!
//! Each session watches its own node rather than the registry: a watch on the registry would
//! make each of N arrivals an event for up to N watchers, N² in all, which measures the
//! workload's fan-out rather than what one session costs. The observers carry the registry's
//! events.
//!
//! A line `ready <connected> <errors> <seconds>` on standard output says every session is set
//! up (or failed to), so that a driver measures the server at rest from then on.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rzk_proto::{EventType, PathWatch, Request};
use rzk_wirekit::raw::{new_session, AsyncClient, RawError, Reply};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

use crate::config::BenchConfig;
use crate::conn::{call, create};
use crate::error::BenchError;
use crate::report::SessionsReport;

/// The read buffer of each session: one reply at a time.
const SESSION_READ_BUFFER_BYTES: usize = 4 * 1024;
/// Distinct connect errors a report names (the rest are counted).
const ERRORS_NAMED_MAX: usize = 3;
/// How long a session may wait for one reply during set-up before it counts as failed.
const SETUP_REPLY_LIMIT: Duration = Duration::from_secs(60);
/// The xid of a one-shot watch's re-arm, whose reply is not waited for.
const REARM_XID: i32 = 7;
/// The xid of the first get; each later get takes the next.
const FIRST_GET_XID: i32 = 1_000;

/// What one session did while it was held.
#[derive(Default)]
struct Held {
    /// Each get: when it was sent (ms since the epoch) and how long its answer took (us).
    gets_us: Vec<(u64, u32)>,
    get_errors: u64,
    events: u64,
    lost: bool,
}

/// Runs the sessions workload: sets up `cfg.sessions` sessions and `cfg.many.observers`
/// observers, says `ready`, holds them for `cfg.duration` (observers until they have seen
/// `cfg.many.expect_deleted` deletions each, when asked), and reports.
pub(crate) async fn run(cfg: &BenchConfig, hosts: &str) -> Result<SessionsReport, BenchError> {
    let addr = hosts.split(',').next().unwrap_or(hosts).split('/').next().unwrap_or(hosts);
    let registry = cfg.many.registry.clone();
    ensure_path(addr, &registry).await?;
    let started = Instant::now();
    let (phase_tx, phase) = watch::channel(Phase::SettingUp);
    let mut observers = JoinSet::new();
    let seen_all = Arc::new(AtomicUsize::new(0));
    for _ in 0..cfg.many.observers {
        let (addr, registry, expect) = (addr.to_owned(), registry.clone(), cfg.many.expect_deleted);
        let (phase, seen_all) = (phase.clone(), seen_all.clone());
        observers.spawn(async move { observe(&addr, &registry, expect, phase, &seen_all).await });
    }
    let permits = Arc::new(Semaphore::new(cfg.many.connect_concurrency.max(1)));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut sessions = JoinSet::new();
    let pid = std::process::id();
    for i in 0..cfg.sessions {
        let plan = Plan::of(cfg, i, format!("{registry}/s-{pid}-{i}"));
        let (addr, permits, ready) = (addr.to_owned(), permits.clone(), ready_tx.clone());
        let phase = phase.clone();
        sessions.spawn(async move {
            let permit = permits.acquire_owned().await;
            let set_up = set_up(&addr, &plan).await;
            drop(permit);
            let (client, error) = match set_up {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e.to_string())),
            };
            let _ = ready.send(error);
            drop(ready);
            let client = client?;
            Some(hold(client, &plan, phase).await)
        });
    }
    drop(ready_tx);
    let (mut connected, mut errors, mut named) = (0usize, 0usize, BTreeSet::new());
    while let Some(outcome) = ready_rx.recv().await {
        match outcome {
            None => connected += 1,
            Some(e) => {
                errors += 1;
                if named.len() < ERRORS_NAMED_MAX {
                    named.insert(e);
                }
            }
        }
    }
    let connect_s = started.elapsed().as_secs_f64();
    println!("ready {connected} {errors} {connect_s:.3}");
    let held_from = Instant::now();
    let _ = phase_tx.send(Phase::Held);
    // Observers waiting for deletions end the run when they have seen them all.
    let all_seen = cfg.many.observers > 0 && cfg.many.expect_deleted.is_some();
    let watching = async {
        while !all_seen || seen_all.load(Ordering::SeqCst) < cfg.many.observers {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let _ = tokio::time::timeout(cfg.duration, watching).await;
    let _ = phase_tx.send(Phase::Done);
    let mut report = SessionsReport::new(cfg.sessions, connected, errors, named, connect_s);
    let mut gets_us = Vec::new();
    while let Some(done) = sessions.join_next().await {
        let Some(h) = done? else { continue };
        gets_us.extend(h.gets_us);
        report.get_errors += h.get_errors;
        report.events += h.events;
        report.lost += usize::from(h.lost);
    }
    report.held_s = held_from.elapsed().as_secs_f64();
    while let Some(seen) = observers.join_next().await {
        let (deleted, first_at, all_at) = seen??;
        report.observed_deleted += deleted;
        report.observed_all_unix_ms = report.observed_all_unix_ms.max(all_at);
        let firsts = [report.observed_first_unix_ms, first_at];
        report.observed_first_unix_ms = firsts.into_iter().flatten().min();
    }
    report.observers = cfg.many.observers;
    report.set_gets(gets_us, cfg.many.samples_out.as_deref())?;
    Ok(report)
}

/// Where the run is: sessions ping from the moment they are set up, read only once all are
/// (so that the reads measure the server holding every session), and end together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    SettingUp,
    Held,
    Done,
}

/// One session's part: its node, its watch, whether it reads and how often.
struct Plan {
    node: String,
    persistent: bool,
    get_every: Option<Duration>,
    timeout: Duration,
    /// Where in its ping period and get period the session starts, so that N sessions do not
    /// tick together: a fraction in [0, 1).
    phase: f64,
}

impl Plan {
    fn of(cfg: &BenchConfig, i: usize, node: String) -> Plan {
        let m = &cfg.many;
        // Spread evenly: the i-th session of every hundred is persistent below the share.
        let share =
            |pct: u8, salt: usize| (i.wrapping_mul(37).wrapping_add(salt)) % 100 < usize::from(pct);
        Plan {
            node,
            persistent: share(m.persistent_pct, 0),
            get_every: share(m.getters_pct, 11).then_some(m.get_interval),
            timeout: cfg.session_timeout,
            phase: spread(i),
        }
    }
}

/// A fraction in [0, 1) for session `i`, the same every run (splitmix64's finaliser).
fn spread(i: usize) -> f64 {
    let mut z = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as f64 / u64::MAX as f64
}

/// Creates `path` and its parents, persistent; those that exist are left.
async fn ensure_path(addr: &str, path: &str) -> Result<(), BenchError> {
    let (mut c, _) = AsyncClient::connect(addr, Duration::from_secs(30)).await?;
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at = format!("{at}/{part}");
        call(&mut c, &create(at.clone(), Vec::new(), 0)).await?;
    }
    c.close().await?;
    Ok(())
}

/// A session with its ephemeral node and its watch.
async fn set_up(addr: &str, plan: &Plan) -> Result<AsyncClient, BenchError> {
    let mut c = AsyncClient::open_with_buffer(addr, SESSION_READ_BUFFER_BYTES).await?;
    let steps = async {
        c.handshake(&new_session(plan.timeout)).await.map_err(|e| match e {
            e @ RawError::Handshake { .. } => BenchError::Refused { source: e },
            e => e.into(),
        })?;
        let err = call(&mut c, &create(plan.node.clone(), Vec::new(), 1)).await?;
        if err != 0 {
            return Err(BenchError::stopped(format!("create {}: error {err}", plan.node)));
        }
        let watch = if plan.persistent {
            Request::AddWatch { path: plan.node.clone(), mode: 0 }
        } else {
            Request::Exists(PathWatch { path: plan.node.clone(), watch: true })
        };
        call(&mut c, &watch).await?;
        Ok::<_, BenchError>(())
    };
    match tokio::time::timeout(SETUP_REPLY_LIMIT, steps).await {
        Ok(r) => r.map(|()| c),
        Err(_) => Err(BenchError::stopped(format!("no reply within {SETUP_REPLY_LIMIT:?}"))),
    }
}

/// Holds a set-up session until the run is done: pings, reads once all are held, re-arms.
async fn hold(mut c: AsyncClient, plan: &Plan, mut phase: watch::Receiver<Phase>) -> Held {
    let mut held = Held::default();
    let ping_every = plan.timeout / 3;
    let start = Instant::now();
    let mut next_ping = start + ping_every.mul_f64(plan.phase);
    let mut next_get = None;
    let mut get_sent: Option<(i32, Instant)> = None;
    let mut xid = FIRST_GET_XID;
    let get = Request::GetData(PathWatch { path: plan.node.clone(), watch: false });
    loop {
        match *phase.borrow_and_update() {
            Phase::Done => break,
            Phase::Held if next_get.is_none() => {
                let now = Instant::now();
                next_get = plan.get_every.map(|every| now + every.mul_f64(plan.phase));
            }
            _ => {}
        }
        let mut wake = next_ping;
        if let (Some(at), None) = (next_get, get_sent) {
            wake = wake.min(at);
        }
        let readable = tokio::select! {
            r = c.readable() => Some(r),
            _ = tokio::time::sleep_until(wake.into()) => None,
            _ = phase.changed() => continue,
        };
        let step = match readable {
            Some(Ok(())) => match c.read_reply().await {
                Ok(reply) => on_reply(&mut c, plan, &reply, &mut get_sent, &mut held).await,
                Err(e) => Err(e),
            },
            Some(Err(e)) => Err(e),
            None => Ok(()),
        };
        let now = Instant::now();
        let step = match step {
            Ok(()) if now >= next_ping => {
                next_ping += ping_every;
                c.send_ping().await
            }
            other => other,
        };
        let step = match (step, next_get, get_sent) {
            (Ok(()), Some(at), None) if now >= at => {
                xid += 1;
                get_sent = Some((xid, now));
                // Back to back (an interval of zero) reads again as soon as answered.
                next_get = plan.get_every.map(|every| at.max(now - every) + every);
                c.send(&get, xid).await
            }
            (step, _, _) => step,
        };
        if step.is_err() {
            held.lost = true;
            return held;
        }
    }
    let _ = c.close().await;
    held
}

/// One frame: a get's reply is timed, an event counted and a one-shot watch re-armed.
async fn on_reply(
    c: &mut AsyncClient,
    plan: &Plan,
    reply: &Reply,
    get_sent: &mut Option<(i32, Instant)>,
    held: &mut Held,
) -> Result<(), RawError> {
    if reply.is_notification() {
        held.events += 1;
        if !plan.persistent {
            let rearm = Request::Exists(PathWatch { path: plan.node.clone(), watch: true });
            c.send(&rearm, REARM_XID).await?;
        }
        return Ok(());
    }
    if let Some((xid, sent)) = *get_sent {
        if reply.header.xid == xid {
            *get_sent = None;
            if reply.header.err == 0 {
                let took = sent.elapsed();
                let us = u32::try_from(took.as_micros()).unwrap_or(u32::MAX);
                let sent_ms = unix_ms().saturating_sub(took.as_millis());
                held.gets_us.push((u64::try_from(sent_ms).unwrap_or(u64::MAX), us));
            } else {
                held.get_errors += 1;
            }
        }
    }
    Ok(())
}

/// An observer: a persistent recursive watch on the registry; the deletions it saw, when it
/// saw the first, and when the `expect`-th (ms since the epoch), if it did before the run
/// was done.
async fn observe(
    addr: &str,
    registry: &str,
    expect: Option<u64>,
    mut phase: watch::Receiver<Phase>,
    seen_all: &AtomicUsize,
) -> Result<(u64, Option<u128>, Option<u128>), BenchError> {
    let (mut c, _) = AsyncClient::connect(addr, Duration::from_secs(30)).await?;
    call(&mut c, &Request::AddWatch { path: registry.to_owned(), mode: 1 }).await?;
    let (mut deleted, mut first_at, mut all_at) = (0u64, None, None);
    let ping_every = Duration::from_secs(10);
    let mut next_ping = Instant::now() + ping_every;
    while *phase.borrow_and_update() != Phase::Done && all_at.is_none() {
        let readable = tokio::select! {
            r = c.readable() => Some(r),
            _ = tokio::time::sleep_until(next_ping.into()) => None,
            _ = phase.changed() => continue,
        };
        if let Some(r) = readable {
            r?;
            let reply = c.read_reply().await?;
            if reply.is_notification() && reply.event()?.event_type == EventType::NodeDeleted {
                deleted += 1;
                first_at = first_at.or_else(|| Some(unix_ms()));
                if expect.is_some_and(|n| deleted >= n) {
                    all_at = Some(unix_ms());
                    seen_all.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        if Instant::now() >= next_ping {
            next_ping += ping_every;
            c.send_ping().await?;
        }
    }
    let _ = c.close().await;
    Ok((deleted, first_at, all_at))
}

/// Milliseconds since the epoch: what a driver compares with its own kill's time.
fn unix_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}
