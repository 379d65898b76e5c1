//! The fan-out workloads (fanout, fanout-persistent): rounds of one write and `watchers`
//! notifications, timed from the write to the last notification.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_proto::{PathWatch, Request};
use tokio::sync::Notify;

use crate::config::{BenchConfig, Workload};
use crate::conn::{call, connect, create};
use crate::error::BenchError;
use rzk_wirekit::raw::{is_notification, AsyncClient};
use rzk_wirekit::stats::Samples;

/// The node every watcher watches.
const NODE: &str = "/bench/fan";

/// How long a round's phase (arming, notifying) may take before the run stops.
const PHASE_TIMEOUT: Duration = Duration::from_secs(10);

/// addWatch's mode for a persistent, non-recursive watch (`AddWatchMode.PERSISTENT`).
const ADD_WATCH_PERSISTENT: i32 = 0;

/// Progress of a fan-out's watchers, as running totals over all rounds. A watcher arms and is
/// notified once per round, in that order, so round `r` is armed when `armed` reaches
/// `watchers * (r + 1)` and complete when `notified` does. (config-propagation counts its
/// caches' updates in `notified` the same way and leaves `armed` alone.)
pub(crate) struct Progress {
    watchers: u64,
    armed: AtomicU64,
    pub(crate) notified: AtomicU64,
    /// Woken by the watcher whose count completes a round's total: one wake-up of the setter
    /// per phase instead of one per watcher (a channel message per arm and per event made the
    /// load generator's own CPU, on the cores it shares with the server, a large part of every
    /// round).
    done: Notify,
}

impl Progress {
    pub(crate) fn new(watchers: u64) -> Progress {
        Progress {
            watchers,
            armed: AtomicU64::new(0),
            notified: AtomicU64::new(0),
            done: Notify::new(),
        }
    }

    pub(crate) fn add(&self, counter: &AtomicU64) {
        if (counter.fetch_add(1, Ordering::SeqCst) + 1) % self.watchers == 0 {
            self.done.notify_one();
        }
    }

    /// Waits until `counter` reaches `total`; an error if [`PHASE_TIMEOUT`] passes without a
    /// phase completing (one watcher that never answers stalls every round, so the run stops
    /// instead).
    pub(crate) async fn wait(
        &self,
        counter: &AtomicU64,
        total: u64,
        what: &str,
    ) -> Result<(), BenchError> {
        loop {
            // `notify_one` leaves a permit when no one waits, so a round completed between the
            // load and the wait is not missed; a stale permit only costs one more check.
            let done = self.done.notified();
            if counter.load(Ordering::SeqCst) >= total {
                return Ok(());
            }
            if tokio::time::timeout(PHASE_TIMEOUT, done).await.is_err() {
                return Err(BenchError::stopped(what));
            }
        }
    }
}

/// Runs rounds until `deadline`; per round, the time from the write to its last
/// notification, and from the write's reply to that notification.
pub(crate) async fn run(
    cfg: &BenchConfig,
    hosts: &str,
    deadline: Instant,
) -> Result<(Samples, Samples), BenchError> {
    let mut setter = connect(hosts).await?;
    call(&mut setter, &create(NODE.into(), vec![], 0)).await?;
    let progress = Arc::new(Progress::new(cfg.watchers));
    let persistent = cfg.workload == Workload::FanoutPersistent;
    let mut tasks = Vec::new();
    for _ in 0..cfg.watchers {
        let mut client = connect(hosts).await?;
        if persistent {
            // Registered here, not in the task, so that a server without addWatch (ZooKeeper
            // before 3.6) fails the run with its error instead of a stalled round.
            let add = Request::AddWatch { path: NODE.into(), mode: ADD_WATCH_PERSISTENT };
            match call(&mut client, &add).await? {
                0 => {}
                e => return Err(BenchError::stopped(format!("addWatch failed with error {e}"))),
            }
        }
        let progress = progress.clone();
        tasks.push(tokio::spawn(async move {
            if persistent {
                persistent_watcher(client, &progress).await
            } else {
                one_shot_watcher(client, &progress).await
            }
        }));
    }
    let (mut samples, mut after_ack) = (Samples::default(), Samples::default());
    let set =
        Request::SetData { path: NODE.into(), data: Some(vec![b'x'; cfg.data_bytes]), version: -1 };
    let mut total = 0;
    while Instant::now() < deadline {
        total += progress.watchers;
        progress.wait(&progress.armed, total, "watchers stopped arming").await?;
        let t0 = Instant::now();
        call(&mut setter, &set).await?;
        let acked = Instant::now();
        progress.wait(&progress.notified, total, "notifications stopped").await?;
        // Both instants are the setter's wake-ups, as a client sees the reply and the events.
        let all_notified = Instant::now();
        samples.push(all_notified - t0);
        after_ack.push(all_notified - acked);
    }
    for t in tasks {
        t.abort();
    }
    Ok((samples, after_ack))
}

/// A watcher on one-shot watches: it re-arms (a getData with a watch) on every event. It
/// returns on the first unexpected frame or error, which stalls the rounds and so ends the
/// run with the setter's timeout.
async fn one_shot_watcher(mut client: AsyncClient, progress: &Progress) {
    let arm = Request::GetData(PathWatch { path: NODE.into(), watch: true }).to_frame(1);
    for round in 0u64.. {
        // From the second round on, the re-arm goes out as soon as the event's bytes
        // arrive, before they are read, so that it carries their ACK. Read first, the
        // event (the second small segment since this side last sent) makes the kernel
        // acknowledge at once with a packet of its own: one per watcher and round, a
        // sizeable share of the load generator's CPU on the cores it shares with the
        // server. Waiting for readability leaves the bytes queued, which defers that ACK.
        // The server sees the same requests in the same order.
        let armed = round > 0;
        if armed && client.readable().await.is_err() {
            return;
        }
        if client.write_raw(&arm).await.is_err() {
            return;
        }
        if armed {
            // Only the event can arrive while armed; anything else stops the run.
            match client.read_frame().await {
                Ok(f) if is_notification(&f) => progress.add(&progress.notified),
                _ => return,
            }
        }
        loop {
            let Ok(f) = client.read_frame().await else { return };
            if !is_notification(&f) {
                break;
            }
        }
        progress.add(&progress.armed);
    }
}

/// A watcher on a persistent watch, already registered: each round is one event and nothing
/// to send. It returns as [`one_shot_watcher`] does.
async fn persistent_watcher(mut client: AsyncClient, progress: &Progress) {
    progress.add(&progress.armed);
    loop {
        match client.read_frame().await {
            Ok(f) if is_notification(&f) => {}
            _ => return,
        }
        progress.add(&progress.notified);
        // Still armed: the next round may begin at once.
        progress.add(&progress.armed);
    }
}
