//! The tokio runtime every command runs on, and how the server's threads take turns between
//! ready connections.
//!
//! A connection's task is woken by the I/O driver on the thread that polled it, into that
//! thread's local queue (tokio's holds 256 tasks); past that, into the queue all threads
//! share, which tokio serves once in 61 tasks (or its own tuning). Under overload, thousands
//! of connections are ready at once: every poll of the driver refills the local queue, and a
//! connection that overflowed waits for the rest, the longer the deeper the overload, and can
//! outwait a client's read timeout (two thirds of its session's). [`Schedule::Fair`] serves the
//! shared queue first at every task, so no ready connection waits behind more than a round
//! of the others; the price is a thread's cache, warm for the connections it woke itself.

use std::io;

use tokio::runtime::{Builder, Runtime};

/// How a server's I/O threads choose the next ready connection (`rzk server --schedule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Schedule {
    /// The connections queued for every thread first, at every task: under overload each
    /// ready connection is answered in its turn, fewer reads per second, a short tail.
    Fair,
    /// tokio's default: a thread serves the connections its own reads woke and looks at the
    /// shared queue once in a while: more reads per second under overload, a tail of seconds.
    Throughput,
}

/// The multi-threaded runtime. `io_threads` and `schedule` are the server's (`None` for every
/// other command: tokio's defaults, one thread per CPU or `TOKIO_WORKER_THREADS`).
///
/// # Errors
/// The runtime's own: its threads or its I/O driver could not be created.
pub(crate) fn build(io_threads: Option<u16>, schedule: Option<Schedule>) -> io::Result<Runtime> {
    let mut builder = Builder::new_multi_thread();
    if let Some(n) = io_threads {
        builder.worker_threads(usize::from(n));
    }
    if schedule == Some(Schedule::Fair) {
        builder.global_queue_interval(1);
    }
    builder.enable_all().build()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Local tasks one thread queues for itself while a connection woken from elsewhere
    /// waits in the shared queue: fewer than tokio's 256, so none overflows.
    const LOCAL_TASKS: usize = 200;
    const OUTSIDER: usize = usize::MAX;

    /// Where, among the tasks run after one thread queued [`LOCAL_TASKS`] for itself, the
    /// task another thread woke meanwhile ran.
    fn outsider_position(schedule: Schedule) -> usize {
        let rt = build(Some(1), Some(schedule)).expect("runtime");
        let handle = rt.handle().clone();
        let order = Arc::new(Mutex::new(Vec::new()));
        let done = Arc::new(tokio::sync::Semaphore::new(0));
        let (o, d) = (order.clone(), done.clone());
        rt.block_on(async move {
            let queueing = tokio::spawn(async move {
                // Another thread's wake-up: into the shared queue, before the local work.
                let (oo, dd) = (o.clone(), d.clone());
                std::thread::spawn(move || {
                    handle.spawn(async move {
                        oo.lock().expect("order").push(OUTSIDER);
                        dd.add_permits(1);
                    });
                })
                .join()
                .expect("spawning thread");
                for i in 0..LOCAL_TASKS {
                    let (oo, dd) = (o.clone(), d.clone());
                    tokio::spawn(async move {
                        oo.lock().expect("order").push(i);
                        dd.add_permits(1);
                    });
                }
            });
            queueing.await.expect("queueing task");
            let all = u32::try_from(LOCAL_TASKS + 1).expect("small");
            let _ = done.acquire_many(all).await.expect("open");
        });
        let order = order.lock().expect("order");
        order.iter().position(|&t| t == OUTSIDER).expect("the outsider ran")
    }

    #[test]
    fn a_fair_server_runs_a_connection_woken_elsewhere_at_its_turn() {
        // After the queueing task, tokio runs the one task in its "next" slot, then the shared
        // queue's: at most a couple ahead.
        let position = outsider_position(Schedule::Fair);
        assert!(position <= 2, "ran after {position} local tasks");
    }

    #[test]
    fn a_throughput_server_lets_it_wait_behind_local_work() {
        // The trade-off `--schedule` offers: without the fair setting the outsider waits for
        // tokio's interval; should a tokio upgrade change that, the option's reason goes too.
        let position = outsider_position(Schedule::Throughput);
        assert!(position > 20, "ran after only {position} local tasks");
    }
}
