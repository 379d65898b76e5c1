//! Running a command only while a term (a leadership, a lock, a lease) lasts: the flags that
//! set the session and the grace, the stop signals, and the loop that renews the watchdog and
//! stops the command's group on loss. Shared by `rzk elect` and `rzk lock`.
//!
//! # The kill rule
//! The child must be dead before the server could expire our session, or a new holder could
//! start while the old child still acts. The election library resolves its loss signal a
//! *stop budget* before the lease deadline (the last server acknowledgement plus the session
//! timeout, minus a safety margin), and earlier still when the connection is suspended. The
//! budget is the grace plus [`KILL_SLACK`]: SIGTERM goes to the child's process group at the
//! loss, SIGKILL at loss + grace, and the group is reaped within the slack. The grace is
//! clamped to a third of the negotiated session timeout minus the slack, so the budget always
//! fits inside the lease.
//!
//! # When rzk itself cannot keep the rule
//! A dead, hung or stopped rzk cannot stop anything, so the command runs under a watchdog
//! process ([`crate::watchdog`]) that holds the same stop time (the lease deadline minus the
//! budget), renewed from here every [`RENEW_POLL`] while the lease moves forward. The
//! watchdog stops the command's group when that time passes unrenewed, when this process
//! dies (its end of the channel closes), or when told to. Limits, also in `--help`: a process
//! that leaves the group (setsid, a daemon) escapes; if the watchdog alone is killed, this
//! process kills the group itself; on a frozen host nothing runs, so only fencing tokens
//! protect against the stopped but not dead holder.

use std::time::{Duration, Instant};

use clap::Args;
use rzk_recipes::{session::Session, Leadership};
use tokio::signal::unix::{signal, SignalKind};

use crate::client_metrics::{self, ChildRunning, MetricsFlags};
use crate::connect::Connect;
use crate::error::CliError;
use crate::watchdog_handle::Watched;
use crate::watchdog_proto::status_code;

/// Time allowed between SIGKILL and the child's exit being reaped.
pub(crate) const KILL_SLACK: Duration = Duration::from_millis(200);
/// How often the lease deadline is read and, if it moved, sent on to the watchdog. The lease
/// moves on every acknowledgement, at least once a heartbeat (a sixth of the session timeout).
const RENEW_POLL: Duration = Duration::from_millis(50);

/// The session and stop flags of a supervising command.
#[derive(Debug, Args)]
pub(crate) struct SessionFlags {
    /// Requested session timeout; the server may clamp it.
    #[arg(long, default_value_t = 10_000)]
    session_timeout_ms: u64,
    /// Time between SIGTERM and SIGKILL when the term is lost (clamped, see the docs).
    #[arg(long, default_value_t = 2_000)]
    grace_ms: u64,
    /// The ACL of every node this command creates, in zkCli's syntax (`auth::cdrwa`: only
    /// this command's own identities, from --auth or --jaas) [default: world:anyone:cdrwa].
    #[arg(long, value_parser = crate::acl::parse_acl)]
    pub acl: Option<crate::acl::AclList>,
    #[command(flatten)]
    metrics: MetricsFlags,
}

/// A supervising command's session and the grace it may use.
pub(crate) struct Supervisor {
    /// The name messages start with ("rzk elect").
    pub name: &'static str,
    pub session: Session,
    pub grace: Duration,
}

impl Supervisor {
    /// Opens the session and clamps the grace to it.
    pub(crate) async fn open(
        name: &'static str,
        connect: &Connect,
        f: &SessionFlags,
    ) -> Result<Supervisor, CliError> {
        let metrics_at = client_metrics::start(&f.metrics).await?;
        if let Some(addr) = metrics_at {
            eprintln!("{name}: metrics at http://{addr}/metrics");
        }
        let session =
            connect.election_session(Some(Duration::from_millis(f.session_timeout_ms))).await?;
        let timeout = session.negotiated_timeout();
        let grace = clamp_grace(Duration::from_millis(f.grace_ms), timeout);
        let s = Supervisor { name, session, grace };
        if grace < Duration::from_millis(f.grace_ms) {
            s.say(format_args!(
                "grace clamped to {} ms so the command is dead before the {} ms session could expire",
                grace.as_millis(),
                timeout.as_millis()
            ));
        }
        Ok(s)
    }

    /// The stop budget the recipes must resolve their loss signal by, before the deadline.
    pub(crate) fn budget(&self) -> Duration {
        self.grace + KILL_SLACK
    }

    pub(crate) fn say(&self, msg: impl std::fmt::Display) {
        eprintln!("{}: {msg}", self.name);
    }

    /// Runs `command` under a watchdog for one term; `held` names the term in messages
    /// ("leadership", "the lock").
    pub(crate) async fn run_term(
        &self,
        command: &[String],
        envs: &[(&str, String)],
        term: &Leadership,
        held: &str,
        stop_signals: &mut StopSignals,
    ) -> Result<TermEnd, CliError> {
        let (grace, budget) = (self.grace, self.budget());
        let mut child = Watched::start(command, envs, grace, stop_at(term, budget)).await?;
        let _running = ChildRunning::new();
        let lost = term.lost();
        tokio::pin!(lost);
        let mut renew = tokio::time::interval(RENEW_POLL);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                reason = &mut lost => {
                    self.say(format_args!("lost {held} ({reason}); stopping the command (grace {} ms)", grace.as_millis()));
                    let st = child.stop_and_wait(grace).await;
                    if let Some(at) = term.lost_at() {
                        client_metrics::child_stopped_after_loss(at.elapsed());
                    }
                    self.say(format_args!("command stopped (status {})", status_code(st)));
                    return Ok(TermEnd::Lost);
                }
                code = stop_signals.recv() => {
                    child.stop_and_wait(grace).await;
                    return Ok(TermEnd::Signalled(code));
                }
                st = child.wait() => {
                    // Stopped by the watchdog at the stop time, which the loss signal reaches
                    // at most one poll later: the term is over, not merely the command.
                    if child.expired() {
                        if let Ok(reason) = tokio::time::timeout(RENEW_POLL, &mut lost).await {
                            self.say(format_args!("lost {held} ({reason}); the watchdog stopped the command (status {})", status_code(st)));
                            return Ok(TermEnd::Lost);
                        }
                    }
                    return Ok(TermEnd::Exited(status_code(st)));
                }
                _ = renew.tick() => child.renew(stop_at(term, budget)),
            }
        }
    }
}

/// The `--help` paragraphs on what a supervising command guarantees about its command, for
/// the command `$name` ("rzk elect") whose successor is a `$next` ("leader").
macro_rules! guarantee {
    ($name:literal, $next:literal) => {
        concat!(
            "The command runs in a process group of its own under a small watchdog process. The whole
group is stopped (SIGTERM, SIGKILL after the grace) before the session could expire: within a
second of ", $name, " dying in any way, even SIGKILL (the grace is then cut to 500 ms), and by
the lease deadline if ", $name, " hangs or is stopped.

Limits: a process that leaves the group (setsid, a daemon) escapes. If the watchdog alone is
killed, ", $name, " kills the group itself. On a frozen host nothing runs: the session expires
and the next ", $next, " may act while the old one is stopped but not dead, so pass
RZK_FENCING_TOKEN to whatever the command writes to."
        )
    };
}
pub(crate) use guarantee;

/// SIGINT and SIGTERM, as one stream of exit statuses (130 and 143, the shell's convention).
pub(crate) struct StopSignals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub(crate) fn new() -> Result<StopSignals, CliError> {
        let install = |k| {
            signal(k).map_err(|e| CliError::runtime(format!("installing a signal handler: {e}")))
        };
        Ok(StopSignals {
            int: install(SignalKind::interrupt())?,
            term: install(SignalKind::terminate())?,
        })
    }

    pub(crate) async fn recv(&mut self) -> u8 {
        tokio::select! {
            _ = self.int.recv() => 130,
            _ = self.term.recv() => 143,
        }
    }
}

/// The grace actually used for a negotiated session timeout.
pub(crate) fn clamp_grace(requested: Duration, session_timeout: Duration) -> Duration {
    requested.min((session_timeout / 3).saturating_sub(KILL_SLACK))
}

/// When the watchdog must stop the command unless renewed: the lease deadline minus the budget,
/// the time at which the election library resolves the loss signal.
fn stop_at(term: &Leadership, budget: Duration) -> Instant {
    let deadline = term.deadline();
    deadline.checked_sub(budget).unwrap_or(deadline)
}

/// How one term ended.
pub(crate) enum TermEnd {
    /// The command exited with this status.
    Exited(u8),
    /// The term was lost and the command stopped.
    Lost,
    /// A signal told us to stop; exit with this status.
    Signalled(u8),
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
