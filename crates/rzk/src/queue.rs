//! `rzk queue offer|take|len PATH`: a Curator `SimpleDistributedQueue` (`qn-<seq>` nodes) from
//! the shell, one item a line; with `--curator-envelope`, a Curator `DistributedQueue`
//! (`queue-<seq>` nodes, Curator's item envelope), taken under `--lock-path` at least once.

use std::convert::Infallible;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use rzk_recipes::queue::{DistributedQueue, SimpleDistributedQueue};

use crate::connect::Connect;
use crate::error::CliError;
use crate::json;

/// The status `rzk queue take` exits with when `--timeout-ms` passed before enough items came.
pub(crate) const TIMED_OUT: u8 = 3;

/// `rzk queue`'s subcommands.
#[derive(Debug, Args)]
pub(crate) struct QueueArgs {
    #[command(subcommand)]
    op: QueueOp,
    /// Curator's DistributedQueue layout: `queue-<seq>` nodes holding Curator's item envelope
    /// (one node per offered item, or per `offer --multi`), instead of SimpleDistributedQueue's
    /// `qn-<seq>` nodes of raw bytes.
    #[arg(long, global = true)]
    curator_envelope: bool,
    /// With --curator-envelope: take under this lock path (Curator's lockPath). A node's items
    /// are printed before it is deleted, so a take killed in between leaves it for the next
    /// consumer (at least once); nodes other consumers hold locked are passed over.
    #[arg(long, global = true)]
    lock_path: Option<String>,
}

#[derive(Debug, Subcommand)]
enum QueueOp {
    /// Append items (the arguments, or each line of standard input when there are none).
    Offer {
        /// The queue path.
        path: String,
        /// The items, in order.
        items: Vec<String>,
        /// With --curator-envelope: all the items in one node (Curator's putMulti), taken
        /// together.
        #[arg(long)]
        multi: bool,
    },
    /// Remove items from the head and print each on a line of its own, waiting for them.
    /// Exits 3 if `--timeout-ms` passes first.
    Take {
        /// The queue path.
        path: String,
        /// How many items to take (with --curator-envelope: how many nodes, each printed
        /// item by item).
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Give up after this long (default: wait for ever).
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// One JSON object per item: {"item": "..."} (the bytes as UTF-8, invalid ones replaced).
        #[arg(long)]
        json: bool,
    },
    /// Print the number of queued items (with --curator-envelope: of nodes).
    Len {
        /// The queue path.
        path: String,
        /// Print {"path": "...", "len": N}.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `rzk queue`; returns the exit status.
pub(crate) async fn run(connect: &Connect, args: QueueArgs) -> Result<u8, CliError> {
    let path = match &args.op {
        QueueOp::Offer { path, .. } | QueueOp::Take { path, .. } | QueueOp::Len { path, .. } => {
            path.clone()
        }
    };
    let bad = |e: rzk_recipes::Error| CliError::usage(format!("{path}: {e}"));
    let multi = matches!(args.op, QueueOp::Offer { multi: true, .. });
    if !args.curator_envelope && (multi || args.lock_path.is_some()) {
        return Err(CliError::usage("--multi and --lock-path need --curator-envelope"));
    }
    let session = connect.election_session(None).await?;
    let queue = if args.curator_envelope {
        let queue = DistributedQueue::new(&session, &path).map_err(bad)?;
        match &args.lock_path {
            Some(lock_path) => Queue::Curator(queue.with_lock_path(lock_path).map_err(bad)?),
            None => Queue::Curator(queue),
        }
    } else {
        Queue::Simple(SimpleDistributedQueue::new(&session, &path).map_err(bad)?)
    };
    let code = match args.op {
        QueueOp::Offer { items, multi, .. } => {
            let items = if items.is_empty() { stdin_lines()? } else { items };
            queue.offer(items, multi).await.map_err(bad)?;
            0
        }
        QueueOp::Take { count, timeout_ms, json, .. } => {
            take(&queue, count, timeout_ms.map(Duration::from_millis), json).await.map_err(bad)?
        }
        QueueOp::Len { json, .. } => {
            let len = queue.len().await.map_err(bad)?;
            if json {
                #[derive(serde::Serialize)]
                struct Len<'a> {
                    path: &'a str,
                    len: usize,
                }
                println!("{}", json::line(&Len { path: &path, len }));
            } else {
                println!("{len}");
            }
            0
        }
    };
    session.close().await;
    Ok(code)
}

/// The queue in the layout `--curator-envelope` chose.
enum Queue {
    Simple(SimpleDistributedQueue),
    Curator(DistributedQueue),
}

impl Queue {
    /// Appends `items`: a node each, or (`multi`, Curator's layout) one node for all.
    async fn offer(&self, items: Vec<String>, multi: bool) -> Result<(), rzk_recipes::Error> {
        match self {
            Queue::Curator(queue) if multi => drop(queue.put_multi(items).await?),
            Queue::Curator(queue) => {
                for item in items {
                    queue.put(item.as_bytes()).await?;
                }
            }
            Queue::Simple(queue) => {
                for item in items {
                    queue.offer(item.as_bytes()).await?;
                }
            }
        }
        Ok(())
    }

    async fn len(&self) -> Result<usize, rzk_recipes::Error> {
        match self {
            Queue::Simple(queue) => queue.len().await,
            Queue::Curator(queue) => queue.len().await,
        }
    }

    /// After a take timed out: a take whose delete landed as the deadline passed keeps its
    /// node in the handle, which would queue it again only while the session closes, too late
    /// for a command that is about to exit. A poll returns it (or a node queued just now), and
    /// it is printed as taken; false if there is none. Takes under a lock path print before
    /// they delete, and keep nothing.
    async fn poll_held(&self, json: bool) -> Result<bool, rzk_recipes::Error> {
        let items = match self {
            Queue::Curator(queue) if queue.lock_path().is_some() => return Ok(false),
            Queue::Simple(queue) => queue.poll().await?.map(|i| vec![i]),
            Queue::Curator(queue) => queue.poll().await?,
        };
        let Some(items) = items else { return Ok(false) };
        print_items(&items, json);
        Ok(true)
    }

    /// Takes one node and prints its items; false if `deadline` passed first.
    async fn take_one(
        &self,
        deadline: Option<Instant>,
        json: bool,
    ) -> Result<bool, rzk_recipes::Error> {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let items = match (self, left) {
            (Queue::Curator(queue), _) if queue.lock_path().is_some() => {
                return take_locked(queue, deadline, json).await
            }
            (Queue::Simple(queue), None) => Some(vec![queue.take().await?]),
            (Queue::Simple(queue), Some(left)) => queue.take_timeout(left).await?.map(|i| vec![i]),
            (Queue::Curator(queue), None) => Some(queue.take().await?),
            (Queue::Curator(queue), Some(left)) => queue.take_timeout(left).await?,
        };
        let Some(items) = items else { return Ok(false) };
        print_items(&items, json);
        Ok(true)
    }
}

/// Takes one node under the queue's lock path: its items are printed before it is deleted.
/// `deadline` bounds the wait for a node, not its processing once begun.
async fn take_locked(
    queue: &DistributedQueue,
    deadline: Option<Instant>,
    json: bool,
) -> Result<bool, rzk_recipes::Error> {
    let started = AtomicBool::new(false);
    let consume = queue.consume(|items| {
        started.store(true, Ordering::Relaxed);
        print_items(&items, json);
        std::future::ready(Ok::<_, Infallible>(()))
    });
    tokio::pin!(consume);
    let Some(deadline) = deadline else { return consume.await.map(|_| true) };
    let consumed = tokio::select! {
        consumed = &mut consume => consumed,
        () = tokio::time::sleep_until(deadline.into()) => {
            if !started.load(Ordering::Relaxed) {
                return Ok(false);
            }
            consume.await
        }
    };
    consumed.map(|_| true)
}

/// An item as `take --json` prints it.
#[derive(serde::Serialize)]
struct Item<'a> {
    item: &'a str,
}

/// Prints each item on a line of its own (as UTF-8, invalid bytes replaced), then flushes.
fn print_items(items: &[Vec<u8>], json: bool) {
    let mut out = std::io::stdout().lock();
    for item in items {
        let text = String::from_utf8_lossy(item);
        let _ = if json {
            writeln!(out, "{}", json::line(&Item { item: &text }))
        } else {
            writeln!(out, "{text}")
        };
    }
    let _ = out.flush();
}

/// Takes `count` nodes, printing their items as they come; [`TIMED_OUT`] if `limit` passes
/// first.
async fn take(
    queue: &Queue,
    count: u64,
    limit: Option<Duration>,
    json: bool,
) -> Result<u8, rzk_recipes::Error> {
    let deadline = limit.map(|l| Instant::now() + l);
    for _ in 0..count {
        if !queue.take_one(deadline, json).await? && !queue.poll_held(json).await? {
            return Ok(TIMED_OUT);
        }
    }
    Ok(0)
}

fn stdin_lines() -> Result<Vec<String>, CliError> {
    std::io::stdin()
        .lock()
        .lines()
        .collect::<Result<_, _>>()
        .map_err(|e| CliError::runtime(format!("reading standard input: {e}")))
}
