//! `rzk barrier set|remove|wait PATH` (Curator's `DistributedBarrier`: the node's existence)
//! and `rzk barrier enter PATH --members N -- CMD` (a `DistributedDoubleBarrier` member for
//! the life of CMD).
//!
//! A double-barrier member must stay in the barrier from `enter` until `leave`; a process
//! that exits between the two would let its node vanish with its session, so there is no
//! separate `enter` and `leave`: `enter` runs the command between them.

use std::time::Duration;

use clap::{Args, Subcommand};
use rzk_recipes::barrier::{DistributedBarrier, DistributedDoubleBarrier};

use crate::connect::Connect;
use crate::error::CliError;
use crate::queue::TIMED_OUT;
use crate::watchdog_proto::status_code;

/// `rzk barrier`'s subcommands.
#[derive(Debug, Args)]
pub(crate) struct BarrierArgs {
    #[command(subcommand)]
    op: BarrierOp,
}

#[derive(Debug, Subcommand)]
enum BarrierOp {
    /// Set the barrier: create its node (and missing parents); fine if it is set.
    Set {
        /// The barrier path.
        path: String,
    },
    /// Remove the barrier, releasing every waiter; fine if it is not set.
    Remove {
        /// The barrier path.
        path: String,
    },
    /// Wait until the barrier is removed (at once if it is not set). Exits 3 if
    /// `--timeout-ms` passes first.
    Wait {
        /// The barrier path.
        path: String,
        /// Give up after this long (default: wait for ever).
        #[arg(long)]
        timeout_ms: Option<u64>,
    },
    /// Enter a double barrier, run the command once `--members` members have entered, then
    /// leave and wait until all have left; exits with the command's status. Exits 3 without
    /// running it if `--timeout-ms` passes before the others enter.
    Enter {
        /// The double barrier path.
        path: String,
        /// How many members must enter before any proceeds.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        members: u64,
        /// Give up entering after this long (default: wait for ever).
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// The command and its arguments.
        #[arg(last = true, required = true, num_args = 1..)]
        command: Vec<String>,
    },
}

/// Runs `rzk barrier`; returns the exit status.
pub(crate) async fn run(connect: &Connect, args: BarrierArgs) -> Result<u8, CliError> {
    let path = match &args.op {
        BarrierOp::Set { path }
        | BarrierOp::Remove { path }
        | BarrierOp::Wait { path, .. }
        | BarrierOp::Enter { path, .. } => path.clone(),
    };
    let bad = |e: rzk_recipes::Error| CliError::usage(format!("{path}: {e}"));
    let session = connect.election_session(None).await?;
    let code = match args.op {
        BarrierOp::Set { .. } => {
            DistributedBarrier::new(&session, &path)
                .map_err(bad)?
                .set_barrier()
                .await
                .map_err(bad)?;
            0
        }
        BarrierOp::Remove { .. } => {
            let barrier = DistributedBarrier::new(&session, &path).map_err(bad)?;
            barrier.remove_barrier().await.map_err(bad)?;
            0
        }
        BarrierOp::Wait { timeout_ms, .. } => {
            let barrier = DistributedBarrier::new(&session, &path).map_err(bad)?;
            let released = match timeout_ms {
                None => barrier.wait_on_barrier().await.map(|()| true),
                Some(ms) => barrier.wait_on_barrier_timeout(Duration::from_millis(ms)).await,
            };
            if released.map_err(bad)? {
                0
            } else {
                TIMED_OUT
            }
        }
        BarrierOp::Enter { members, timeout_ms, command, .. } => {
            let members = usize::try_from(members).unwrap_or(usize::MAX);
            let barrier = DistributedDoubleBarrier::new(&session, &path, members).map_err(bad)?;
            let entered = match timeout_ms {
                None => barrier.enter().await.map(|()| true),
                Some(ms) => barrier.enter_timeout(Duration::from_millis(ms)).await,
            };
            if entered.map_err(bad)? {
                let status = run_command(&command).await;
                barrier.leave().await.map_err(bad)?;
                status?
            } else {
                eprintln!("rzk barrier: {members} members did not enter {path} in time");
                TIMED_OUT
            }
        }
    };
    session.close().await;
    Ok(code)
}

/// Runs `command` with inherited standard streams; its status, the shell's way.
async fn run_command(command: &[String]) -> Result<u8, CliError> {
    let status = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .status()
        .await
        .map_err(|e| CliError::runtime(format!("starting {:?}: {e}", command[0])))?;
    Ok(status_code(Some(status)))
}
