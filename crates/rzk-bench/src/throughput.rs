//! The measured window of the throughput workloads (queue-pairs, counter-add): every worker
//! loops from the start; an operation is counted, with its latency, when it completes inside
//! the window, which opens after a warm-up and lasts the run's duration.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rzk_recipes::session::{Session, SessionConfig};
use tokio::task::JoinSet;

use crate::config::BenchConfig;
use crate::report::ElectionReport;

/// Operations not counted at the start, so that both sides are warm (the JVM's JIT, on
/// Curator's side, whose harness discards as long).
pub(crate) const WARMUP: Duration = Duration::from_secs(2);

/// The workers' sessions' timeout.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// A worker's session of its own (as each of Curator's workers has its own CuratorFramework).
pub(crate) async fn session(hosts: &str) -> Result<Session, rzk_recipes::Error> {
    Session::connect(SessionConfig::new(hosts).with_session_timeout(SESSION_TIMEOUT)).await
}

/// What one operation of a worker's loop came to.
pub(crate) enum Step {
    /// Done, not counted (a producer's offer).
    Continue,
    /// Done: counted, from the given start.
    Counted(Instant),
    /// Failed; the worker goes on.
    Failed,
    /// Failed; the worker stops.
    Fatal,
}

/// The window, the latencies counted in it and the failures.
#[derive(Default)]
pub(crate) struct Window {
    /// From and until; unset during the warm-up.
    span: OnceLock<(Instant, Instant)>,
    samples_us: Mutex<Vec<u64>>,
    errors: AtomicU64,
}

impl Window {
    /// An operation started at `started` completed now.
    fn done(&self, started: Instant) {
        let Some(&(from, until)) = self.span.get() else { return };
        let at = Instant::now();
        if at >= from && at < until {
            let us = at.saturating_duration_since(started).as_micros() as u64;
            self.samples_us.lock().unwrap_or_else(|e| e.into_inner()).push(us);
        }
    }

    /// An operation failed.
    fn failed(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the window is over (the workers stop).
    fn over(&self) -> bool {
        self.span.get().is_some_and(|&(_, until)| Instant::now() >= until)
    }

    /// Spawns a worker on `tasks` that runs `op` in a loop until the window is over.
    pub(crate) fn spawn<F, Fut>(self: &Arc<Self>, tasks: &mut JoinSet<()>, mut op: F)
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Step> + Send,
    {
        let w = self.clone();
        tasks.spawn(async move {
            while !w.over() {
                match op().await {
                    Step::Continue => {}
                    Step::Counted(started) => w.done(started),
                    Step::Failed => w.failed(),
                    Step::Fatal => return w.failed(),
                }
            }
        });
    }

    /// Warms up, measures for `cfg.duration`, then stops the workers of `tasks` (their
    /// operations must be cancellation-safe) and reports what the window counted.
    pub(crate) async fn run(
        &self,
        cfg: &BenchConfig,
        tasks: JoinSet<()>,
        participants: usize,
    ) -> ElectionReport {
        tokio::time::sleep(WARMUP).await;
        let from = Instant::now();
        let _ = self.span.set((from, from + cfg.duration));
        tokio::time::sleep(cfg.duration).await;
        drop(tasks);
        self.report(cfg, participants)
    }

    fn report(&self, cfg: &BenchConfig, participants: usize) -> ElectionReport {
        let samples =
            std::mem::take(&mut *self.samples_us.lock().unwrap_or_else(|e| e.into_inner()));
        let (seconds, errors) = (cfg.duration.as_secs_f64(), self.errors.load(Ordering::Relaxed));
        // Nobody watches a predecessor here: strategy "-".
        ElectionReport::timed(cfg.workload, participants, "-", seconds, samples, errors)
    }
}
