//! `rzk elect PATH -- CMD`: run a command only while this process leads.
//!
//! The command runs under [`crate::supervise`]: the kill rule, the watchdog and its limits are
//! described there.

use std::time::Duration;

use clap::{Args, ValueEnum};
use rzk_recipes::{
    election::{
        LatchOptions, LeaderLatch, LeaderSelector, RaceElection, RaceOptions, SelectorOptions,
    },
    session::Session,
    Leadership,
};

use crate::connect::Connect;
use crate::error::CliError;
use crate::supervise::{guarantee, SessionFlags, StopSignals, Supervisor, TermEnd};

/// Which Curator recipe to join with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Recipe {
    /// LeaderLatch (`_c_<uuid>-latch-<seq>` nodes).
    Latch,
    /// LeaderSelector (`_c_<uuid>-lock-<seq>` nodes).
    Selector,
    /// The race for PATH itself, an EPHEMERAL node (Kafka's `/controller` layout), fenced by
    /// the epoch node `PATH_epoch`; not fair: every waiter races when the leader goes.
    Race,
}

/// Flags of `rzk elect`.
#[derive(Debug, Args)]
#[command(after_long_help = guarantee!("rzk elect", "leader"))]
pub(crate) struct ElectArgs {
    /// The election path, shared by every candidate.
    path: String,
    /// This participant's id, stored as its node's data [default: <hostname>-<pid>].
    #[arg(long)]
    id: Option<String>,
    /// The recipe; candidates in one path must all use the same one.
    #[arg(long, value_enum, default_value_t = Recipe::Latch)]
    recipe: Recipe,
    #[command(flatten)]
    session: SessionFlags,
    /// When the command exits, queue up again instead of exiting.
    #[arg(long)]
    requeue: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

/// Any recipe, behind one face.
enum Contender {
    Latch(LeaderLatch),
    Selector(LeaderSelector),
    Race(RaceElection),
}

impl Contender {
    async fn await_leadership(&self) -> Result<Leadership, rzk_recipes::Error> {
        match self {
            Contender::Latch(l) => l.await_leadership().await,
            Contender::Selector(s) => s.await_leadership().await,
            Contender::Race(r) => r.await_leadership().await,
        }
    }

    async fn close(self) {
        let _ = match self {
            Contender::Latch(l) => l.close().await,
            Contender::Selector(s) => s.close().await,
            Contender::Race(r) => r.close().await,
        };
    }
}

async fn join(
    session: &Session,
    a: &ElectArgs,
    id: &str,
    budget: Duration,
) -> Result<Contender, CliError> {
    let err = |e: rzk_recipes::Error| CliError::usage(format!("cannot join {}: {e}", a.path));
    let acls = crate::acl::recipe_acls(a.session.acl.as_ref());
    Ok(match a.recipe {
        Recipe::Latch => {
            let opts = LatchOptions::default().with_id(id).with_stop_budget(budget).with_acls(acls);
            let latch = LeaderLatch::new(session, &a.path, opts).map_err(err)?;
            latch.start().await.map_err(err)?;
            Contender::Latch(latch)
        }
        Recipe::Selector => {
            let opts =
                SelectorOptions::default().with_id(id).with_stop_budget(budget).with_acls(acls);
            let sel = LeaderSelector::new(session, &a.path, opts).map_err(err)?;
            sel.start(|_leadership| std::future::pending::<Result<(), rzk_recipes::BoxError>>())
                .map_err(err)?;
            Contender::Selector(sel)
        }
        Recipe::Race => {
            let opts = RaceOptions::default().with_id(id).with_stop_budget(budget).with_acls(acls);
            let race = RaceElection::new(session, &a.path, opts).map_err(err)?;
            race.start().await.map_err(err)?;
            Contender::Race(race)
        }
    })
}

/// Runs the command under a watchdog for one term.
async fn lead(
    sup: &Supervisor,
    a: &ElectArgs,
    id: &str,
    leadership: &Leadership,
    stop_signals: &mut StopSignals,
) -> Result<TermEnd, CliError> {
    let token = leadership.token();
    sup.say(format_args!("leader of {} with token {token}; starting {:?}", a.path, a.command));
    let envs = [
        ("RZK_FENCING_TOKEN", token.to_string()),
        ("RZK_ELECTION_PATH", a.path.clone()),
        ("RZK_PARTICIPANT_ID", id.to_string()),
    ];
    sup.run_term(&a.command, &envs, leadership, "leadership", stop_signals).await
}

/// Runs `rzk elect`; returns the exit status.
pub(crate) async fn run(connect: &Connect, a: ElectArgs) -> Result<u8, CliError> {
    let id = a.id.clone().unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_else(|_| "host".into());
        format!("{}-{}", host.trim(), std::process::id())
    });
    let sup = Supervisor::open("rzk elect", connect, &a.session).await?;
    let timeout = sup.session.negotiated_timeout();
    let mut stop_signals = StopSignals::new()?;
    loop {
        let contender = join(&sup.session, &a, &id, sup.budget()).await?;
        sup.say(format_args!(
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
                    sup.say("stopped by a signal; resigned");
                    return Ok(code);
                }
            };
            match lead(&sup, &a, &id, &leadership, &mut stop_signals).await? {
                TermEnd::Exited(code) => {
                    sup.say(format_args!("command exited with status {code}; resigning"));
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
                    sup.say("stopped by a signal; command stopped; resigned");
                    return Ok(code);
                }
            }
        }
    }
}
