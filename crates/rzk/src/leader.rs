//! `rzk leader PATH`: who leads, in what order the others follow, live with `--watch`.

use clap::Args;
use rzk_client as zk;
use rzk_recipes::election::{
    LatchOptions, LeaderLatch, LeaderSelector, Participants, RaceElection, RaceOptions,
    SelectorOptions,
};

use crate::connect::Connect;
use crate::elect::Recipe;
use crate::error::CliError;
use crate::json::{self, ParticipantDoc};

/// Flags of `rzk leader`.
#[derive(Debug, Args)]
pub(crate) struct LeaderArgs {
    /// The election path.
    path: String,
    /// Which recipe's node layout to read.
    #[arg(long, value_enum, default_value_t = Recipe::Latch)]
    recipe: Recipe,
    /// Keep printing, once per change.
    #[arg(long)]
    watch: bool,
    /// One JSON object per view: {"leader": {...} or null, "participants": [...]}.
    #[arg(long)]
    json: bool,
}

/// The `--json` rendering of one view.
pub(crate) fn to_json(p: &Participants) -> String {
    #[derive(serde::Serialize)]
    struct View<'a> {
        leader: Option<ParticipantDoc<'a>>,
        participants: Vec<ParticipantDoc<'a>>,
    }
    let leader = p.list.first().map(|l| ParticipantDoc::of(l, true));
    let participants = p.list.iter().map(|x| ParticipantDoc::of(x, false)).collect();
    json::line(&View { leader, participants })
}

pub(crate) fn to_text(path: &str, p: &Participants) -> String {
    let mut out = match p.list.first() {
        Some(l) => format!(
            "leader of {path}: {} (token {}, node {}, session {:#x})\n",
            l.id, l.token, l.node, l.session.0
        ),
        None => format!("no leader of {path}\n"),
    };
    for (i, x) in p.list.iter().enumerate() {
        out.push_str(&format!("  {i}. {} (token {}, node {})\n", x.id, x.token, x.node));
    }
    for f in &p.foreign {
        out.push_str(&format!("  ! foreign child {f}: no participant leads beside it\n"));
    }
    out
}

/// Runs `rzk leader`.
pub(crate) async fn run(connect: &Connect, a: LeaderArgs) -> Result<(), CliError> {
    let session = connect.election_session(None).await?;
    let bad = |e: rzk_recipes::Error| CliError::usage(format!("{}: {e}", a.path));
    // A recipe that is never started only reads.
    enum Reader {
        Latch(LeaderLatch),
        Selector(LeaderSelector),
        Race(RaceElection),
    }
    let reader = match a.recipe {
        Recipe::Latch => Reader::Latch(
            LeaderLatch::new(&session, &a.path, LatchOptions::default()).map_err(bad)?,
        ),
        Recipe::Selector => Reader::Selector(
            LeaderSelector::new(&session, &a.path, SelectorOptions::default()).map_err(bad)?,
        ),
        Recipe::Race => {
            Reader::Race(RaceElection::new(&session, &a.path, RaceOptions::default()).map_err(bad)?)
        }
    };
    let read = || async {
        match &reader {
            Reader::Latch(l) => l.participants().await,
            Reader::Selector(s) => s.participants().await,
            // The race's one node: its holder leads, nobody queues.
            Reader::Race(r) => r.holder().await.map(|holder| {
                let mut view = Participants::default();
                view.list.extend(holder);
                view
            }),
        }
    };
    let mut watcher = if a.watch {
        let client = session.client().map_err(bad)?;
        Some(
            client
                .watch(&a.path, zk::AddWatchMode::Persistent)
                .await
                .map_err(|e| CliError::usage(format!("{}: {e}", a.path)))?,
        )
    } else {
        None
    };
    let mut last = None;
    loop {
        let view = match read().await {
            Ok(v) => v,
            Err(rzk_recipes::Error::NoNode { .. }) if a.watch => Participants::default(),
            Err(rzk_recipes::Error::NoNode { .. }) => {
                return Err(CliError::usage(format!("node {} does not exist", a.path)))
            }
            Err(e) => return Err(bad(e)),
        };
        if last.as_ref() != Some(&view) {
            if a.json {
                println!("{}", to_json(&view));
            } else {
                print!("{}", to_text(&a.path, &view));
            }
            last = Some(view);
        }
        let Some(w) = watcher.as_mut() else { return Ok(()) };
        let ev = w.changed().await;
        if ev.event_type == zk::EventType::Session && ev.session_state.is_terminated() {
            return Err(CliError::runtime(format!("session ended: {:?}", ev.session_state)));
        }
    }
}
