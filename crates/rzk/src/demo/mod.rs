//! `rzk demo`: an in-process rzk server and the scenarios of the articles users wrote from,
//! printed as a timeline with measured times: the elections (`elections`: a latch's queue,
//! handoffs, a crashed leader, a fair selector), two jobs handing a lock over (`locks`), one
//! config change reaching every watcher (`config`), a service instance leaving every client's
//! list (`services`). Needs no Java and no external server.
//!
//! With `--ui` the web console serves the same server from the start, so the scenarios can be
//! watched as they happen, and both stay up afterwards, with what the scenarios left running
//! (a lock's holder, the config's watchers, a registered instance, a standing election), until
//! Ctrl-C.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use clap::Args;
use rzk_recipes::election::{LatchOptions, LeaderLatch};

use crate::error::CliError;
use elections::ElectionConfig;
use stage::{Kept, Stage};

mod config;
mod elections;
mod locks;
mod services;
mod stage;

/// How long the demo waits, with `--ui`, for the user to open the console before it plays.
const UI_HEAD_START: Duration = Duration::from_secs(3);

/// The election left standing for the console, with its candidates.
const STANDING_ELECTION: &str = "/demo/jobs/report";
const STANDING_CANDIDATES: [&str; 3] = ["report-a", "report-b", "report-c"];

/// Flags of `rzk demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Candidates in the leader-latch scenarios.
    #[arg(long, default_value_t = 5)]
    candidates: usize,
    /// Session timeout of every candidate, ms (bounds the crash failover).
    #[arg(long, default_value_t = 2_000)]
    session_timeout_ms: u64,
    /// Leadership rotations in the selector scenario.
    #[arg(long, default_value_t = 6)]
    rotations: usize,
    /// Serve the web console on the demo's server while it plays, and keep both up after it,
    /// until Ctrl-C.
    #[arg(long)]
    ui: bool,
    /// With --ui: where the console listens.
    #[arg(long, default_value = "127.0.0.1:8080", requires = "ui")]
    ui_bind: SocketAddr,
}

/// Runs `rzk demo`.
pub(crate) async fn run(a: DemoArgs) -> Result<(), CliError> {
    play(a).await.map_err(|e| CliError::runtime(format!("demo: {e:#}")))
}

async fn play(a: DemoArgs) -> anyhow::Result<()> {
    let start = Instant::now();
    let server = rzk_server::TestServer::builder().tick_ms(100).start()?;
    let stage = Stage {
        start,
        hosts: server.connect_string(),
        server: server.addr(),
        session_timeout: Duration::from_millis(a.session_timeout_ms),
    };
    stage.log(format_args!("rzk server running in process on {}", stage.hosts));
    let console = match a.ui {
        true => Some(console(&stage, a.ui_bind).await?),
        false => None,
    };
    let mut kept = Kept::default();
    let cfg = ElectionConfig { candidates: a.candidates, rotations: a.rotations };
    elections::play(&stage, cfg, &mut kept).await?;
    let handover = locks::play(&stage, &mut kept).await?;
    let reach = config::play(&stage, &mut kept).await?;
    let left = services::play(&stage, &mut kept).await?;
    println!(
        "lock handover {:.2} ms; config change reached every watcher in {:.2} ms; the \
         offline instance left every list in {:.2} ms",
        handover.as_secs_f64() * 1e3,
        reach.as_secs_f64() * 1e3,
        left.as_secs_f64() * 1e3
    );
    println!("done in {:.1}s", start.elapsed().as_secs_f64());
    if let Some(console) = console {
        standing_election(&stage, &mut kept).await?;
        println!(
            "\nthe server and the console stay up: http://{}/ (Ctrl-C to stop)",
            console.addr()
        );
        tokio::signal::ctrl_c().await?;
    }
    drop(kept);
    drop(server);
    Ok(())
}

/// The console on the demo's server, started before the scenarios with a head start for the
/// user to open it.
async fn console(stage: &Stage, bind: SocketAddr) -> anyhow::Result<rzk_console::Console> {
    let session = stage.session().await?;
    let config = rzk_console::ConsoleConfig::default().with_servers(&stage.hosts);
    let console = rzk_console::Console::start(session, bind, config).await?;
    println!("the console: http://{}/ (the scenarios start in {UI_HEAD_START:?})", console.addr());
    tokio::time::sleep(UI_HEAD_START).await;
    Ok(console)
}

/// An election that stays up for the console: a leader and two candidates queued behind it.
async fn standing_election(stage: &Stage, kept: &mut Kept) -> anyhow::Result<()> {
    for id in STANDING_CANDIDATES {
        let s = stage.session().await?;
        let latch = LeaderLatch::new(&s, STANDING_ELECTION, LatchOptions::default().with_id(id))?;
        latch.start().await?;
        kept.keep((s, latch));
    }
    Ok(())
}
