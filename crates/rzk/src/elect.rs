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
//!
//! # When rzk elect itself cannot keep the rule
//! A dead, hung or stopped `rzk elect` cannot stop anything, so the command runs under a
//! watchdog process ([`crate::watchdog`]) that holds the same stop time (the lease deadline
//! minus the budget), renewed from here every [`RENEW_POLL`] while the lease moves forward. The
//! watchdog stops the command's group when that time passes unrenewed, when this process
//! dies (its end of the channel closes), or when told to. Limits, also in `--help`: a process
//! that leaves the group (setsid, a daemon) escapes; if the watchdog alone is killed, this
//! process kills the group itself; on a frozen host nothing runs, so only fencing tokens
//! protect against the stopped but not dead leader.

use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use rzk_election::{
    LatchOptions, LeaderLatch, LeaderSelector, Leadership, SelectorOptions, Session,
};
use tokio::signal::unix::{signal, SignalKind};

use crate::connect::Connect;
use crate::error::CliError;
use crate::watchdog_handle::Watched;
use crate::watchdog_proto::status_code;

/// Time allowed between SIGKILL and the child's exit being reaped.
pub(crate) const KILL_SLACK: Duration = Duration::from_millis(200);
/// How often the lease deadline is read and, if it moved, sent on to the watchdog. The lease
/// moves on every acknowledgement, at least once a heartbeat (a sixth of the session timeout).
const RENEW_POLL: Duration = Duration::from_millis(50);

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

/// What `rzk elect` guarantees about its command, for `--help`.
const GUARANTEE: &str = "\
The command runs in a process group of its own under a small watchdog process. The whole
group is stopped (SIGTERM, SIGKILL after the grace) before the session could expire: within a
second of rzk elect dying in any way, even SIGKILL (the grace is then cut to 500 ms), and by
the lease deadline if rzk elect hangs or is stopped.

Limits: a process that leaves the group (setsid, a daemon) escapes. If the watchdog alone is
killed, rzk elect kills the group itself. On a frozen host nothing runs: the session expires
and the next leader may act while the old one is stopped but not dead, so pass
RZK_FENCING_TOKEN to whatever the command writes to.";

/// Flags of `rzk elect`.
#[derive(Debug, Args)]
#[command(after_long_help = GUARANTEE)]
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
            Contender::Latch(l) => l.close().await,
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

/// When the watchdog must stop the command unless renewed: the lease deadline minus the budget,
/// the time at which the election library resolves the loss signal.
fn stop_at(leadership: &Leadership, budget: Duration) -> Instant {
    let deadline = leadership.deadline();
    deadline.checked_sub(budget).unwrap_or(deadline)
}

/// How one term of leadership ended.
enum TermEnd {
    /// The command exited with this status.
    Exited(u8),
    /// Leadership was lost and the command stopped.
    Lost,
    /// A signal told us to stop; exit with this status.
    Signalled(u8),
}

/// Runs the command under a watchdog for one term.
async fn lead(
    a: &ElectArgs,
    id: &str,
    leadership: &Leadership,
    grace: Duration,
    stop_signals: &mut StopSignals,
) -> Result<TermEnd, CliError> {
    let budget = grace + KILL_SLACK;
    let token = leadership.token();
    say(format_args!("leader of {} with token {token}; starting {:?}", a.path, a.command));
    let envs = [
        ("RZK_FENCING_TOKEN", token.to_string()),
        ("RZK_ELECTION_PATH", a.path.clone()),
        ("RZK_PARTICIPANT_ID", id.to_string()),
    ];
    let mut child = Watched::start(&a.command, &envs, grace, stop_at(leadership, budget)).await?;
    let lost = leadership.lost();
    tokio::pin!(lost);
    let mut renew = tokio::time::interval(RENEW_POLL);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            reason = &mut lost => {
                say(format_args!("lost leadership ({reason}); stopping the command (grace {} ms)", grace.as_millis()));
                let st = child.stop_and_wait(grace).await;
                say(format_args!("command stopped (status {})", status_code(st)));
                return Ok(TermEnd::Lost);
            }
            code = stop_signals.recv() => {
                child.stop_and_wait(grace).await;
                return Ok(TermEnd::Signalled(code));
            }
            st = child.wait() => {
                // Stopped by the watchdog at the stop time, which the loss signal reaches at
                // most one poll later: the term is over, not merely the command.
                if child.expired() {
                    if let Ok(reason) = tokio::time::timeout(RENEW_POLL, &mut lost).await {
                        say(format_args!("lost leadership ({reason}); the watchdog stopped the command (status {})", status_code(st)));
                        return Ok(TermEnd::Lost);
                    }
                }
                return Ok(TermEnd::Exited(status_code(st)));
            }
            _ = renew.tick() => child.renew(stop_at(leadership, budget)),
        }
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
            match lead(&a, &id, &leadership, grace, &mut stop_signals).await? {
                TermEnd::Exited(code) => {
                    say(format_args!("command exited with status {code}; resigning"));
                    let _ = leadership.resign().await;
                    contender.close().await;
                    if a.requeue {
                        break;
                    }
                    return Ok(code);
                }
                TermEnd::Lost => {}
                TermEnd::Signalled(code) => {
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
