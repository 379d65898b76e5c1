//! counter-add: `--participants` clients, each on a session of its own, increment one
//! DistributedAtomicLong (Curator's layout) in a loop with the default retry policy
//! (optimistic, versioned writes). An increment is counted when it succeeds, with its latency;
//! one that exhausts its retries is an error, and the client goes on.

use std::sync::Arc;
use std::time::Instant;

use rzk_recipes::{
    counter::{DistributedAtomicLong, RetryPolicy},
    Error,
};
use tokio::task::JoinSet;

use crate::config::BenchConfig;
use crate::error::BenchError;
use crate::report::ElectionReport;
use crate::throughput::{session, Step, Window};

/// Runs the workload: increments per second, latency of an increment.
pub(crate) async fn adds(cfg: &BenchConfig, hosts: &str) -> Result<ElectionReport, BenchError> {
    let path = format!("/bench-counter/c{}", std::process::id());
    let n = cfg.participants.max(1);
    let window = Arc::new(Window::default());
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let counter =
            DistributedAtomicLong::new(&session(hosts).await?, &path, RetryPolicy::default())?;
        window.spawn(&mut tasks, move || {
            let counter = counter.clone();
            async move {
                let called = Instant::now();
                match counter.increment().await {
                    Ok(_) => Step::Counted(called),
                    Err(Error::RetriesExhausted { .. }) => Step::Failed,
                    Err(_) => Step::Fatal,
                }
            }
        });
    }
    Ok(window.run(cfg, tasks, n).await)
}
