//! `rzk elect PATH -- CMD`: run a command only while this process leads.
//!
//! # The kill rule
//! The child must be dead before the server could expire our session, or a new leader could
//! start while the old child still acts. The election library resolves its loss signal a
//! *stop budget* before the lease deadline (the last server acknowledgement plus the session
//! timeout, minus a safety margin), and earlier still when the connection is suspended. The
//! budget is the grace plus [`KILL_SLACK`]: SIGTERM goes to the child's process group at the
//! loss, SIGKILL at loss + grace, and the group is reaped within the slack. The grace is
//! clamped to a third of the negotiated session timeout minus the slack, so the budget always
//! fits inside the lease.

use std::process::ExitStatus;
use std::time::Duration;

use clap::{Args, ValueEnum};
use rzk_election::{
    FencingToken, LatchOptions, LeaderLatch, LeaderSelector, Leadership, SelectorOptions, Session,
};
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, SignalKind};

use crate::connect::Connect;
use crate::error::CliError;

/// Time allowed between SIGKILL and the child's exit being reaped.
pub(crate) const KILL_SLACK: Duration = Duration::from_millis(200);

/// SIGINT and SIGTERM, as one stream of exit statuses (130 and 143, the shell's convention).
struct StopSignals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn new() -> Result<StopSignals, CliError> {
        let install = |k| {
            signal(k).map_err(|e| CliError::runtime(format!("installing a signal handler: {e}")))
        };
        Ok(StopSignals {
            int: install(SignalKind::interrupt())?,
            term: install(SignalKind::terminate())?,
        })
    }

    async fn recv(&mut self) -> u8 {
        tokio::select! {
            _ = self.int.recv() => 130,
            _ = self.term.recv() => 143,
        }
    }
}

/// Which Curator recipe to join with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Recipe {
    /// LeaderLatch (`_c_<uuid>-latch-<seq>` nodes).
    Latch,
    /// LeaderSelector (`_c_<uuid>-lock-<seq>` nodes).
    Selector,
}

/// Flags of `rzk elect`.
#[derive(Debug, Args)]
pub(crate) struct ElectArgs {
    /// The election path, shared by every candidate.
    path: String,
    /// This participant's id, stored as its node's data [default: <hostname>-<pid>].
    #[arg(long)]
    id: Option<String>,
    /// The recipe; candidates in one path must all use the same one.
    #[arg(long, value_enum, default_value_t = Recipe::Latch)]
    recipe: Recipe,
    /// Requested session timeout; the server may clamp it.
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    /// Time between SIGTERM and SIGKILL when leadership is lost (clamped, see the docs).
    #[arg(long, default_value_t = 2_000)]
    grace_ms: u64,
    /// When the command exits, queue up again instead of exiting.
    #[arg(long)]
    requeue: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

fn say(msg: impl std::fmt::Display) {
    eprintln!("rzk elect: {msg}");
}

/// The grace actually used for a negotiated session timeout.
pub(crate) fn clamp_grace(requested: Duration, session_timeout: Duration) -> Duration {
    requested.min((session_timeout / 3).saturating_sub(KILL_SLACK))
}

/// Either recipe, behind one face.
enum Contender {
    Latch(LeaderLatch),
    Selector(LeaderSelector),
}

impl Contender {
    async fn await_leadership(&self) -> Result<Leadership, rzk_election::Error> {
        match self {
            Contender::Latch(l) => l.await_leadership().await,
            Contender::Selector(s) => s.await_leadership().await,
        }
    }

    async fn close(self) {
        let _ = match self {
            Contender::Latch(l) => l.close(None).await,
            Contender::Selector(s) => s.close().await,
        };
    }
}

async fn join(
    session: &Session,
    a: &ElectArgs,
    id: &str,
    budget: Duration,
) -> Result<Contender, CliError> {
    let err = |e: rzk_election::Error| CliError::usage(format!("cannot join {}: {e}", a.path));
    Ok(match a.recipe {
        Recipe::Latch => {
            let opts = LatchOptions::default().with_id(id).with_stop_budget(budget);
            let latch = LeaderLatch::new(session, &a.path, opts).map_err(err)?;
            latch.start().await.map_err(err)?;
            Contender::Latch(latch)
        }
        Recipe::Selector => {
            let opts = SelectorOptions::default().with_id(id).with_stop_budget(budget);
            let sel = LeaderSelector::new(session, &a.path, opts).map_err(err)?;
            sel.start(|_leadership| std::future::pending::<Result<(), rzk_election::BoxError>>())
                .map_err(err)?;
            Contender::Selector(sel)
        }
    })
}

fn spawn(a: &ElectArgs, id: &str, token: FencingToken) -> Result<Child, CliError> {
    let mut cmd = Command::new(&a.command[0]);
    cmd.args(&a.command[1..])
        .env("RZK_FENCING_TOKEN", token.to_string())
        .env("RZK_ELECTION_PATH", &a.path)
        .env("RZK_PARTICIPANT_ID", id)
        .process_group(0)
        .kill_on_drop(true);
    cmd.spawn().map_err(|e| CliError::usage(format!("cannot run {:?}: {e}", a.command[0])))
}

fn signal_group(child: &Child, sig: rustix::process::Signal) {
    if let Some(pid) = child.id().and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// SIGTERM to the whole group, SIGKILL after the grace, then reap.
async fn stop(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    signal_group(child, rustix::process::Signal::TERM);
    if let Ok(st) = tokio::time::timeout(grace, child.wait()).await {
        // The leader process is gone; stragglers in its group must not outlive the term.
        signal_group(child, rustix::process::Signal::KILL);
        return st.ok();
    }
    signal_group(child, rustix::process::Signal::KILL);
    child.wait().await.ok()
}

fn exit_code(st: Option<ExitStatus>) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    match st {
        Some(st) => match (st.code(), st.signal()) {
            (Some(c), _) => c as u8,
            (None, Some(s)) => (128 + s) as u8,
            _ => 1,
        },
        None => 1,
    }
}

/// Runs `rzk elect`; returns the exit status.
pub(crate) async fn run(connect: &Connect, a: ElectArgs) -> Result<u8, CliError> {
    let id = a.id.clone().unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_else(|_| "host".into());
        format!("{}-{}", host.trim(), std::process::id())
    });
    let session =
        connect.election_session(Some(Duration::from_millis(a.session_timeout_ms))).await?;
    let timeout = session.negotiated_timeout();
    let grace = clamp_grace(Duration::from_millis(a.grace_ms), timeout);
    if grace < Duration::from_millis(a.grace_ms) {
        say(format_args!(
            "grace clamped to {} ms so the command is dead before the {} ms session could expire",
            grace.as_millis(),
            timeout.as_millis()
        ));
    }
    let budget = grace + KILL_SLACK;
    let mut stop_signals = StopSignals::new()?;
    loop {
        let contender = join(&session, &a, &id, budget).await?;
        say(format_args!(
            "joined {} as {id} ({:?}, session timeout {} ms)",
            a.path,
            a.recipe,
            timeout.as_millis()
        ));
        loop {
            let leadership = tokio::select! {
                l = contender.await_leadership() => l.map_err(|e| CliError::usage(format!("election on {}: {e}", a.path)))?,
                code = stop_signals.recv() => {
                    contender.close().await;
                    say("stopped by a signal; resigned");
                    return Ok(code);
                }
            };
            let token = leadership.token();
            say(format_args!("leader of {} with token {token}; starting {:?}", a.path, a.command));
            let mut child = spawn(&a, &id, token)?;
            let lost = leadership.lost();
            tokio::select! {
                st = child.wait() => {
                    let code = exit_code(st.ok());
                    say(format_args!("command exited with status {code}; resigning"));
                    let _ = leadership.resign().await;
                    contender.close().await;
                    if a.requeue {
                        break;
                    }
                    return Ok(code);
                }
                reason = lost => {
                    say(format_args!("lost leadership ({reason}); stopping the command (grace {} ms)", grace.as_millis()));
                    let st = stop(&mut child, grace).await;
                    say(format_args!("command stopped (status {})", exit_code(st)));
                }
                code = stop_signals.recv() => {
                    stop(&mut child, grace).await;
                    let _ = leadership.resign().await;
                    contender.close().await;
                    say("stopped by a signal; command stopped; resigned");
                    return Ok(code);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_fits_inside_the_session() {
        let ms = Duration::from_millis;
        assert_eq!(clamp_grace(ms(2_000), ms(10_000)), ms(2_000));
        assert_eq!(clamp_grace(ms(9_000), ms(10_000)), ms(10_000) / 3 - KILL_SLACK);
        assert_eq!(clamp_grace(ms(9_000), ms(300)), ms(0));
    }
}
