//! The lock workloads, on rzk-recipes' recipes: InterProcessMutex handoff among N
//! contenders, uncontended acquire+release pairs, and InterProcessSemaphore grants among N
//! contenders. Every contender has a session of its own (as each of Curator's has its own
//! CuratorFramework) and loops acquire, release, acquire again, holding for no time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rzk_recipes::{
    lock::{InterProcessMutex, InterProcessSemaphore, MutexOptions, SemaphoreOptions},
    session::{Session, SessionConfig},
    Error,
};
use tokio::task::JoinSet;

use crate::config::BenchConfig;
use crate::election::{wait_joined, JOIN_TIMEOUT};
use crate::error::BenchError;
use crate::report::ElectionReport;

/// The contenders' session timeout.
const CONTENDER_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Cycles not measured at the start, so that both sides are warm (the JVM's JIT, on Curator's
/// side): the harness there discards as long.
const WARMUP: Duration = Duration::from_secs(2);

/// What a workload measures of each cycle.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Measure {
    /// From the previous holder's release to this holder's acquire returning (mutex handoff).
    Handoff,
    /// From the acquire's call to the release's return (an uncontended pair).
    Pair,
    /// From the acquire's call to its return (a semaphore's grant).
    Grant,
}

/// The lock each contender cycles.
enum Lock {
    Mutex(InterProcessMutex),
    Semaphore(InterProcessSemaphore),
}

/// What the contenders share: the window measured, the samples, the last release.
struct Recorder {
    measure: Measure,
    /// The measured window, from and until; unset during the joins and the warm-up.
    window: OnceLock<(Instant, Instant)>,
    /// When the holder began its release (the mutex has one holder at a time).
    released_at: Mutex<Option<Instant>>,
    samples: Mutex<Vec<u64>>,
    errors: AtomicU64,
}

impl Recorder {
    fn record(&self, started: Instant, at: Instant) {
        let Some(&(from, until)) = self.window.get() else { return };
        if at >= from && at < until {
            let us = at.saturating_duration_since(started).as_micros() as u64;
            self.samples.lock().unwrap_or_else(|e| e.into_inner()).push(us);
        }
    }

    /// The hold was granted at `at` to an acquire called at `called`.
    fn granted(&self, called: Instant, at: Instant) {
        match self.measure {
            Measure::Grant => self.record(called, at),
            Measure::Handoff => {
                let released = self.released_at.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(r) = released {
                    self.record(r, at);
                }
            }
            Measure::Pair => {}
        }
    }

    /// The holder is about to release.
    fn releasing(&self) {
        if self.measure == Measure::Handoff {
            *self.released_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
    }

    /// Whether the measured window is over.
    fn over(&self) -> bool {
        self.window.get().is_some_and(|&(_, until)| Instant::now() >= until)
    }
}

impl Lock {
    /// One cycle: acquire, release.
    async fn cycle(&self, rec: &Recorder) -> Result<(), Error> {
        let called = Instant::now();
        match self {
            Lock::Mutex(m) => {
                let guard = m.acquire().await?;
                rec.granted(called, Instant::now());
                rec.releasing();
                guard.release().await?;
            }
            Lock::Semaphore(s) => {
                let lease = s.acquire().await?;
                rec.granted(called, Instant::now());
                rec.releasing();
                lease.release().await?;
            }
        }
        if rec.measure == Measure::Pair {
            rec.record(called, Instant::now());
        }
        Ok(())
    }
}

/// Runs `contenders` sessions each cycling the lock `make` gives it, measuring from the
/// end of the warm-up (and, with `queue`, once that many nodes are queued under the lock's
/// path) for the run's duration.
async fn contend(
    cfg: &BenchConfig,
    hosts: &str,
    contenders: usize,
    measure: Measure,
    queue: Option<(&str, usize)>,
    make: impl Fn(&Session) -> Result<Lock, Error>,
) -> Result<ElectionReport, BenchError> {
    let mut locks = Vec::with_capacity(contenders);
    for _ in 0..contenders.max(1) {
        let config = SessionConfig::new(hosts).with_session_timeout(CONTENDER_SESSION_TIMEOUT);
        let session = Session::connect(config).await?;
        locks.push((make(&session)?, session));
    }
    let counter = locks[0].1.clone();
    let rec = Arc::new(Recorder {
        measure,
        window: OnceLock::new(),
        released_at: Mutex::new(None),
        samples: Mutex::new(Vec::new()),
        errors: AtomicU64::new(0),
    });
    let mut tasks = JoinSet::new();
    for (lock, session) in locks {
        let rec = rec.clone();
        tasks.spawn(async move {
            let _session = session;
            while !rec.over() {
                if lock.cycle(&rec).await.is_err() {
                    rec.errors.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        });
    }
    if let Some((path, n)) = queue {
        wait_joined(&counter, path, n, Instant::now() + JOIN_TIMEOUT).await?;
    }
    tokio::time::sleep(WARMUP).await;
    let from = Instant::now();
    let _ = rec.window.set((from, from + cfg.duration));
    tokio::time::sleep(cfg.duration).await;
    // Contenders still queued are cancelled (acquire is cancellation-safe).
    tasks.abort_all();
    let samples = std::mem::take(&mut *rec.samples.lock().unwrap_or_else(|e| e.into_inner()));
    let (seconds, errors) = (cfg.duration.as_secs_f64(), rec.errors.load(Ordering::Relaxed));
    Ok(ElectionReport::timed(cfg.workload, contenders, "predecessor", seconds, samples, errors))
}

/// mutex-handoff: `--participants` contenders on one InterProcessMutex; latency from a
/// holder's release to the next holder's acquire returning.
pub(crate) async fn mutex_handoff(
    cfg: &BenchConfig,
    hosts: &str,
) -> Result<ElectionReport, BenchError> {
    let path = format!("/bench-lock/m{}", std::process::id());
    // All but the one releasing are queued.
    let queue = Some((path.as_str(), cfg.participants.saturating_sub(1).max(1)));
    contend(cfg, hosts, cfg.participants, Measure::Handoff, queue, |s| {
        Ok(Lock::Mutex(InterProcessMutex::new(s, &path, MutexOptions::default())?))
    })
    .await
}

/// mutex-uncontended: one session acquires and releases one InterProcessMutex; pairs per
/// second, latency of a pair.
pub(crate) async fn mutex_uncontended(
    cfg: &BenchConfig,
    hosts: &str,
) -> Result<ElectionReport, BenchError> {
    let path = format!("/bench-lock/u{}", std::process::id());
    contend(cfg, hosts, 1, Measure::Pair, None, |s| {
        Ok(Lock::Mutex(InterProcessMutex::new(s, &path, MutexOptions::default())?))
    })
    .await
}

/// semaphore: `--participants` contenders on an InterProcessSemaphore of `--leases` leases;
/// grants per second, latency from an acquire's call to its grant.
pub(crate) async fn semaphore(
    cfg: &BenchConfig,
    hosts: &str,
) -> Result<ElectionReport, BenchError> {
    let path = format!("/bench-lock/s{}", std::process::id());
    contend(cfg, hosts, cfg.participants, Measure::Grant, None, |s| {
        let options = SemaphoreOptions::default();
        Ok(Lock::Semaphore(InterProcessSemaphore::new(s, &path, cfg.leases, options)?))
    })
    .await
}
