//! `rzk queue offer|take|len PATH`: a Curator `SimpleDistributedQueue` (`qn-<seq>` nodes) from
//! the shell, one item a line.

use std::io::{BufRead, Write};
use std::time::Duration;

use clap::{Args, Subcommand};
use rzk_recipes::SimpleDistributedQueue;

use crate::connect::Connect;
use crate::error::CliError;
use crate::leader::json_str;

/// The status `rzk queue take` exits with when `--timeout-ms` passed before enough items came.
pub(crate) const TIMED_OUT: u8 = 3;

/// `rzk queue`'s subcommands.
#[derive(Debug, Args)]
pub(crate) struct QueueArgs {
    #[command(subcommand)]
    op: QueueOp,
}

#[derive(Debug, Subcommand)]
enum QueueOp {
    /// Append items (the arguments, or each line of standard input when there are none).
    Offer {
        /// The queue path.
        path: String,
        /// The items, in order.
        items: Vec<String>,
    },
    /// Remove items from the head and print each on a line of its own, waiting for them.
    /// Exits 3 if `--timeout-ms` passes first.
    Take {
        /// The queue path.
        path: String,
        /// How many items to take.
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Give up after this long (default: wait for ever).
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// One JSON object per item: {"item": "..."} (the bytes as UTF-8, invalid ones replaced).
        #[arg(long)]
        json: bool,
    },
    /// Print the number of queued items.
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
    let session = connect.election_session(None).await?;
    let queue = SimpleDistributedQueue::new(&session, &path).map_err(bad)?;
    let code = match args.op {
        QueueOp::Offer { items, .. } => {
            let items = if items.is_empty() { stdin_lines()? } else { items };
            for item in items {
                queue.offer(item.as_bytes()).await.map_err(bad)?;
            }
            0
        }
        QueueOp::Take { count, timeout_ms, json, .. } => {
            take(&queue, count, timeout_ms.map(Duration::from_millis), json).await.map_err(bad)?
        }
        QueueOp::Len { json, .. } => {
            let len = queue.len().await.map_err(bad)?;
            if json {
                println!("{{\"path\":{},\"len\":{len}}}", json_str(&path));
            } else {
                println!("{len}");
            }
            0
        }
    };
    session.close().await;
    Ok(code)
}

/// Takes `count` items, printing each as it comes; [`TIMED_OUT`] if `limit` passes first.
async fn take(
    queue: &SimpleDistributedQueue,
    count: u64,
    limit: Option<Duration>,
    json: bool,
) -> Result<u8, rzk_recipes::Error> {
    let deadline = limit.map(|l| std::time::Instant::now() + l);
    for _ in 0..count {
        let item = match deadline {
            None => queue.take().await?,
            Some(d) => {
                let left = d.saturating_duration_since(std::time::Instant::now());
                match queue.take_timeout(left).await? {
                    Some(item) => item,
                    None => return Ok(TIMED_OUT),
                }
            }
        };
        let text = String::from_utf8_lossy(&item);
        let mut out = std::io::stdout().lock();
        let _ = if json {
            writeln!(out, "{{\"item\":{}}}", json_str(&text))
        } else {
            writeln!(out, "{text}")
        };
        let _ = out.flush();
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
