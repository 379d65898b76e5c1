//! `rzk counter get|add PATH`: a Curator `DistributedAtomicLong` (8 big-endian bytes) from the
//! shell.

use clap::{Args, Subcommand};
use rzk_recipes::counter::{DistributedAtomicLong, RetryPolicy};

use crate::connect::Connect;
use crate::error::CliError;
use crate::json;

/// `rzk counter`'s subcommands.
#[derive(Debug, Args)]
pub(crate) struct CounterArgs {
    #[command(subcommand)]
    op: CounterOp,
}

#[derive(Debug, Subcommand)]
enum CounterOp {
    /// Print the value (0 if the node does not exist).
    Get {
        /// The counter path.
        path: String,
        /// Print {"path": "...", "value": N}.
        #[arg(long)]
        json: bool,
    },
    /// Add DELTA (default 1) and print the new value.
    Add {
        /// The counter path.
        path: String,
        /// What to add (may be negative).
        #[arg(default_value_t = 1, allow_negative_numbers = true)]
        delta: i64,
        /// Attempts against concurrent writers before giving up.
        #[arg(long, default_value_t = RetryPolicy::default().max_attempts)]
        attempts: u32,
        /// Print {"path": "...", "pre": N, "post": N}.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `rzk counter`.
pub(crate) async fn run(connect: &Connect, args: CounterArgs) -> Result<(), CliError> {
    let (path, attempts) = match &args.op {
        CounterOp::Get { path, .. } => (path.clone(), RetryPolicy::default().max_attempts),
        CounterOp::Add { path, attempts, .. } => (path.clone(), *attempts),
    };
    let bad = |e: rzk_recipes::Error| CliError::usage(format!("{path}: {e}"));
    let session = connect.election_session(None).await?;
    let policy = RetryPolicy { max_attempts: attempts, ..RetryPolicy::default() };
    let counter = DistributedAtomicLong::new(&session, &path, policy).map_err(bad)?;
    match args.op {
        CounterOp::Get { json, .. } => {
            let value = counter.get().await.map_err(bad)?;
            if json {
                #[derive(serde::Serialize)]
                struct Value<'a> {
                    path: &'a str,
                    value: i64,
                }
                println!("{}", json::line(&Value { path: &path, value }));
            } else {
                println!("{value}");
            }
        }
        CounterOp::Add { delta, json, .. } => {
            let v = counter.add(delta).await.map_err(bad)?;
            if json {
                #[derive(serde::Serialize)]
                struct Added<'a> {
                    path: &'a str,
                    pre: i64,
                    post: i64,
                }
                println!("{}", json::line(&Added { path: &path, pre: v.pre, post: v.post }));
            } else {
                println!("{}", v.post);
            }
        }
    }
    session.close().await;
    Ok(())
}
