//! `rzk bench`: the flags of the load generator; the work is rzk-bench's.

use std::time::Duration;

use clap::Args;
use rzk_bench::{BenchConfig, BenchError, ManySessions, Strategy, Workload};
use rzk_recipes::tls::TlsConfig;

use crate::connect::Connect;
use crate::error::CliError;
use crate::runtime::Schedule;

/// Flags of `rzk bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The workload.
    #[arg(long, value_enum)]
    workload: Workload,
    /// Concurrent sessions.
    #[arg(long, default_value_t = 8)]
    sessions: usize,
    /// Requests outstanding per session.
    #[arg(long, default_value_t = 16)]
    in_flight: usize,
    /// How long to run (not for populate).
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// Bytes of data per write.
    #[arg(long, default_value_t = 100)]
    data_bytes: usize,
    /// Nodes that set/get/mixed spread over.
    #[arg(long, default_value_t = 1000)]
    keys: usize,
    /// Znodes to create (populate).
    #[arg(long, default_value_t = 1_000_000)]
    znodes: usize,
    /// Watching sessions (fanout); caches of the config node (config-propagation).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    watchers: u64,
    /// Election participants (handoff, handoff-event, selector); lock contenders
    /// (mutex-handoff, semaphore); producers and consumers each (queue-pairs); clients
    /// (counter-add).
    #[arg(long, default_value_t = 5)]
    participants: usize,
    /// Leases of the semaphore (semaphore).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    leases: u32,
    /// Sessions the participants share (handoff), or the caches (config-propagation); default
    /// one each.
    #[arg(long)]
    participant_sessions: Option<usize>,
    /// Idle time after each handoff before the next resign or delete (handoff,
    /// handoff-event), ms: the old leader's rejoin is then out of the way; after each write's
    /// last cache update (config-propagation). 0 hands off back to back.
    #[arg(long, default_value_t = 0)]
    gap_ms: u64,
    /// Follower watch strategy: predecessor; for comparison, herd (handoff) or race
    /// (handoff-event: the race election).
    #[arg(long, value_enum, default_value_t = Strategy::Predecessor)]
    strategy: Strategy,
    /// Session timeout (failover), ms.
    #[arg(long, default_value_t = 4_000)]
    session_timeout_ms: u64,
    /// Trials (failover).
    #[arg(long, default_value_t = 10)]
    trials: usize,
    /// The process of the ensemble member to SIGKILL (session-failover).
    #[arg(long)]
    kill_pid: Option<u32>,
    #[command(flatten)]
    many: ManySessionsArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The sessions workload's flags.
#[derive(Debug, Args)]
struct ManySessionsArgs {
    /// The parent of the sessions' ephemeral nodes (sessions).
    #[arg(long, default_value = "/rzk-bench/registry")]
    registry: String,
    /// Sessions whose watch on their node is persistent, percent (sessions).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    persistent_pct: u8,
    /// Sessions that read their node, percent (sessions).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u8).range(0..=100))]
    getters_pct: u8,
    /// How often each reader reads, ms; 0 reads back to back, one read in flight (sessions).
    #[arg(long, default_value_t = 1_000)]
    get_interval_ms: u64,
    /// Sessions connecting at once (sessions); as many as --sessions is a storm.
    #[arg(long, default_value_t = 256)]
    connect_concurrency: usize,
    /// Sessions counting the registry's deletions, through a persistent recursive watch
    /// (sessions).
    #[arg(long, default_value_t = 0)]
    observers: usize,
    /// Deletions after which each observer stops and reports when it saw the last (sessions).
    #[arg(long)]
    expect_deleted: Option<u64>,
    /// Write every read here, one per line: when it was sent (ms since the epoch) and its
    /// latency (us) (sessions).
    #[arg(long, value_name = "FILE")]
    samples_out: Option<std::path::PathBuf>,
}

impl ManySessionsArgs {
    fn config(&self) -> ManySessions {
        ManySessions {
            registry: self.registry.clone(),
            persistent_pct: self.persistent_pct,
            getters_pct: self.getters_pct,
            get_interval: Duration::from_millis(self.get_interval_ms),
            connect_concurrency: self.connect_concurrency,
            observers: self.observers,
            expect_deleted: self.expect_deleted,
            samples_out: self.samples_out.clone(),
        }
    }
}

impl BenchArgs {
    /// The sessions workload stands in for thousands of client processes, each of which the
    /// operating system would run as soon as its reply came: on tokio's default schedule the
    /// load tool itself left replies unread behind its threads' local queues, a tail it added
    /// to every server's figures. Fewer sessions than a thread's local queue holds (every
    /// other workload's usual case) are served in turn either way.
    pub(crate) fn schedule(&self) -> Option<Schedule> {
        (self.workload == Workload::Sessions).then_some(Schedule::Fair)
    }

    fn config(&self, tls: Option<TlsConfig>) -> BenchConfig {
        BenchConfig {
            workload: self.workload,
            sessions: self.sessions,
            in_flight: self.in_flight,
            duration: Duration::from_secs_f64(self.duration_s),
            data_bytes: self.data_bytes,
            keys: self.keys,
            znodes: self.znodes,
            watchers: self.watchers,
            participants: self.participants,
            leases: self.leases,
            participant_sessions: self.participant_sessions,
            gap: Duration::from_millis(self.gap_ms),
            strategy: self.strategy,
            session_timeout: Duration::from_millis(self.session_timeout_ms),
            trials: self.trials,
            kill_pid: self.kill_pid,
            tls,
            many: self.many.config(),
        }
    }
}

/// Runs `rzk bench`: prints the report on standard output.
///
/// Credentials and a SASL login are refused, not ignored: the load generator opens raw
/// sessions with none, and against a server that enforces authentication every one of them
/// would be turned away, or, against one that does not, measure something else than asked.
pub(crate) async fn run(connect: &Connect, args: BenchArgs) -> Result<(), CliError> {
    if !connect.credentials()?.is_empty() || connect.sasl()?.is_some() {
        return Err(CliError::usage(
            "bench: the load generator sends no credentials and no SASL login; drop --auth, \
             --auth-file and --jaas (and RZK_AUTH, RZK_AUTH_FILE, RZK_JAAS, CLIENT_JVMFLAGS' \
             JAAS file) and point it at a server that does not require them",
        ));
    }
    match rzk_bench::run(&connect.hosts, args.config(connect.tls()?)).await {
        Ok(report) => {
            println!("{}", report.render(args.json));
            Ok(())
        }
        Err(e) => Err(cli_error(e)),
    }
}

/// The exit status and message of a failed run: a mistake the user can fix is a usage
/// error; the connect and address errors name the address, the others say the bench failed.
fn cli_error(e: BenchError) -> CliError {
    match e {
        BenchError::Connect(_) | BenchError::FailoverTarget(_) => CliError::usage(e.to_string()),
        e if e.is_usage() => CliError::usage(format!("bench: {e}")),
        e => CliError::runtime(format!("bench: {e}")),
    }
}
