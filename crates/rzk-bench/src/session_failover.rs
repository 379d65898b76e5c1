//! The session-failover workload: rzk-client's side of docs/BENCHMARKS.md's Failover row, the
//! counterpart of tests/interop/java/FailoverBench.java (the Java client). `--sessions`
//! sessions on the whole connect string (each client shuffles it); once every one is served,
//! the member whose process is `--kill-pid` is SIGKILLed. A session that sees Disconnected
//! within [`MOVED_WITHIN`] of the kill was on that member; its sample is the kill to the
//! answer of its first read after it is connected again: the time it was not served.

use std::time::{Duration, Instant};

use rzk_client::{Client, Error, SessionState};
use tokio::task::JoinSet;

use crate::config::{BenchConfig, Strategy, Workload};
use crate::error::BenchError;
use crate::report::ElectionReport;

/// A session disconnected this soon after the kill was on the killed member.
const MOVED_WITHIN: Duration = Duration::from_secs(1);
/// How long the sessions serve before the kill: a connection lost younger than rzk-client's
/// `HEALTHY_AFTER` (1 s) counts as a failed attempt and is retried after a back-off instead of
/// the reconnect's random pause, and the member of a deployment has served for longer.
const SETTLE: Duration = Duration::from_secs(2);
/// How long a moved session may take to be served again before the run fails.
const SERVED_LIMIT: Duration = Duration::from_secs(60);

/// Runs one kill under `--sessions` sessions.
pub(crate) async fn run(cfg: &BenchConfig, hosts: &str) -> Result<ElectionReport, BenchError> {
    let pid =
        cfg.kill_pid.ok_or_else(|| BenchError::stopped("session-failover needs --kill-pid"))?;
    let connector = Client::connector().with_session_timeout(cfg.session_timeout);
    let mut clients = Vec::with_capacity(cfg.sessions);
    for _ in 0..cfg.sessions.max(1) {
        let c = connector.connect(hosts).await?;
        c.check_stat("/").await?;
        clients.push(c);
    }
    tokio::time::sleep(SETTLE).await;
    let killed = Instant::now();
    let kill = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    let status = kill.map_err(|e| BenchError::stopped(format!("kill {pid}: {e}")))?;
    if !status.success() {
        return Err(BenchError::stopped(format!("kill {pid}: {status}")));
    }
    let mut waits = JoinSet::new();
    for c in &clients {
        let c = c.clone();
        waits.spawn(async move { served_after(&c, killed).await });
    }
    let mut samples = Vec::new();
    while let Some(r) = waits.join_next().await {
        if let Some(took) = r?? {
            samples.push(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
        }
    }
    for c in &clients {
        c.close().await;
    }
    let seconds = killed.elapsed().as_secs_f64();
    let strategy = Strategy::Predecessor.name();
    Ok(ElectionReport::timed(
        Workload::SessionFailover,
        clients.len(),
        strategy,
        seconds,
        samples,
        0,
    ))
}

/// How long after `killed` a read on `c` was answered, if `c` was on the killed member.
async fn served_after(c: &Client, killed: Instant) -> Result<Option<Duration>, BenchError> {
    let mut states = c.state_watcher();
    let moved =
        tokio::time::timeout_at(tokio::time::Instant::from_std(killed) + MOVED_WITHIN, async {
            loop {
                let s = states.changed().await;
                if s == SessionState::Disconnected || s.is_terminated() {
                    break;
                }
            }
        });
    if c.state() != SessionState::Disconnected && moved.await.is_err() {
        return Ok(None);
    }
    let deadline = killed + SERVED_LIMIT;
    loop {
        match c.check_stat("/").await {
            Ok(_) => return Ok(Some(killed.elapsed())),
            Err(Error::ConnectionLoss) if Instant::now() < deadline => {}
            Err(e) => return Err(e.into()),
        }
    }
}
