//! queue-pairs: `--participants` producers and as many consumers, each on a session of its
//! own, share one SimpleDistributedQueue (Curator's layout). Producers offer as fast as the
//! backlog allows, consumers take in a loop; a pair is counted when its item is taken, with
//! the time from its offer's call to its take's return.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_recipes::queue::SimpleDistributedQueue;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::config::BenchConfig;
use crate::error::BenchError;
use crate::report::ElectionReport;
use crate::throughput::{session, Step, Window};

/// Items offered and not yet taken, at most: the queue stays short, so that a take's list
/// costs the same throughout the run (Curator's harness bounds it the same).
const BACKLOG_ITEMS: usize = 64;

/// The bytes of an item: nanoseconds from `base` to its offer's call, big-endian.
fn item(base: Instant, called: Instant) -> [u8; 8] {
    (called.duration_since(base).as_nanos() as u64).to_be_bytes()
}

/// When the offer of `item` was called; `None` for an item of another form.
fn offered_at(base: Instant, item: &[u8]) -> Option<Instant> {
    let nanos = u64::from_be_bytes(item.try_into().ok()?);
    Some(base + Duration::from_nanos(nanos))
}

async fn queue(hosts: &str, path: &str) -> Result<SimpleDistributedQueue, BenchError> {
    Ok(SimpleDistributedQueue::new(&session(hosts).await?, path)?)
}

/// Runs the workload: pairs per second, latency from offer to take.
pub(crate) async fn pairs(cfg: &BenchConfig, hosts: &str) -> Result<ElectionReport, BenchError> {
    let path = format!("/bench-queue/q{}", std::process::id());
    let n = cfg.participants.max(1);
    let window = Arc::new(Window::default());
    let backlog = Arc::new(Semaphore::new(BACKLOG_ITEMS));
    let base = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let (producer, b) = (queue(hosts, &path).await?, backlog.clone());
        window.spawn(&mut tasks, move || {
            let (producer, b) = (producer.clone(), b.clone());
            async move {
                let Ok(permit) = b.acquire().await else { return Step::Fatal };
                // Given back by the consumer that takes the item.
                permit.forget();
                match producer.offer(&item(base, Instant::now())).await {
                    Ok(_) => Step::Continue,
                    Err(_) => Step::Fatal,
                }
            }
        });
        let (consumer, b) = (queue(hosts, &path).await?, backlog.clone());
        // Takes still waiting when the window ends are cancelled (a take is cancellation-safe).
        window.spawn(&mut tasks, move || {
            let (consumer, b) = (consumer.clone(), b.clone());
            async move {
                let Ok(item) = consumer.take().await else { return Step::Fatal };
                b.add_permits(1);
                offered_at(base, &item).map_or(Step::Failed, Step::Counted)
            }
        });
    }
    Ok(window.run(cfg, tasks, n).await)
}
