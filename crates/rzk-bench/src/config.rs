//! What `rzk bench` runs: the workloads and their parameters.
//!
//! With the `clap` feature, [`Workload`] and [`Strategy`] are `clap::ValueEnum`s whose doc
//! comments are the `--workload` and `--strategy` help.

use std::time::Duration;

use rzk_client::tls::TlsConfig;

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Workload {
    /// Persistent sequential creates.
    Create,
    /// setData over `--keys` nodes.
    Set,
    /// getData over `--keys` nodes.
    Get,
    /// 90% getData, 10% setData.
    Mixed,
    /// Ephemeral create + delete, counted as one op.
    Churn,
    /// `--watchers` sessions watch one node; one setData per round; latency to the last event.
    /// Each watcher re-arms its one-shot data watch (a getData) on every event.
    Fanout,
    /// As fanout, but each watcher holds one persistent watch (addWatch, ZooKeeper 3.6+)
    /// instead: per watcher and round one event and no re-arm.
    FanoutPersistent,
    /// Create `--znodes` znodes with 16-byte data as fast as possible.
    Populate,
    /// LeaderLatch handoff: the leader resigns and rejoins; time to the successor's leadership.
    Handoff,
    /// Election handoff at the protocol level, on any server: `--participants` sessions hold
    /// ephemeral sequential nodes, each watching its predecessor's; the first deletes its node
    /// and rejoins at the tail. Latency from the delete to the successor's event. With
    /// `--strategy race`, the race election instead: every participant creates one ephemeral
    /// node at a fixed path, and watches it with `exists` while another holds it; latency
    /// from the leader's delete to the winner's create reply, and notifications per handoff.
    HandoffEvent,
    /// As handoff-event, but the successor then lists the election's children, as a recipe
    /// that checks before it claims does (Curator's LeaderLatch, rzk-recipes); latency from
    /// the delete to that list's reply: the protocol's floor under a LeaderLatch handoff.
    HandoffRead,
    /// LeaderSelector leaderships per second (auto-requeue, empty task).
    Selector,
    /// Crash failover: the leader's network is cut; time to the successor's leadership.
    Failover,
    /// InterProcessMutex, `--participants` contenders each acquiring and releasing in a loop:
    /// latency from a holder's release to the next holder's acquire returning.
    MutexHandoff,
    /// InterProcessMutex, one session acquiring and releasing in a loop: pairs per second.
    MutexUncontended,
    /// InterProcessSemaphore of `--leases` leases, `--participants` contenders each acquiring
    /// and releasing in a loop: grants per second.
    Semaphore,
    /// SimpleDistributedQueue, `--participants` producers and as many consumers: offer+take
    /// pairs per second, latency from an item's offer to its take.
    QueuePairs,
    /// DistributedAtomicLong, `--participants` clients incrementing one counter in a loop
    /// (default retry policy): increments per second.
    CounterAdd,
    /// Seed 002's configuration node: `--watchers` NodeCaches of one node on
    /// `--participant-sessions` sessions (default one each), one setData at a time, `--gap-ms`
    /// apart: latency from the write to each cache's update and to the last one.
    ConfigPropagation,
    /// Service discovery: `--participants` service caches, one session each, follow one
    /// service; a victim session's instance dies (its connection closed, the session left to
    /// expire after `--session-timeout-ms`); latency from the death to the last cache without
    /// it; `--trials` deaths.
    DiscoveryExpiry,
    /// Session failover on an ensemble: `--sessions` sessions on the whole connect string;
    /// the member whose process is `--kill-pid` is SIGKILLed; latency from the kill to each
    /// of its sessions' first read answered again (docs/client.md).
    SessionFailover,
    /// Many idle sessions, as service instances are: `--sessions` each with an ephemeral node
    /// and a watch on it, pinging; some reading every `--get-interval-ms`; `--observers`
    /// counting the registry's deletions (docs/BENCHMARKS.md, Sessions).
    Sessions,
}

impl Workload {
    /// The workload's name on the command line and in reports (`fanout-persistent`).
    pub fn name(self) -> &'static str {
        match self {
            Workload::Create => "create",
            Workload::Set => "set",
            Workload::Get => "get",
            Workload::Mixed => "mixed",
            Workload::Churn => "churn",
            Workload::Fanout => "fanout",
            Workload::FanoutPersistent => "fanout-persistent",
            Workload::Populate => "populate",
            Workload::Handoff => "handoff",
            Workload::HandoffEvent => "handoff-event",
            Workload::HandoffRead => "handoff-read",
            Workload::Selector => "selector",
            Workload::Failover => "failover",
            Workload::MutexHandoff => "mutex-handoff",
            Workload::MutexUncontended => "mutex-uncontended",
            Workload::Semaphore => "semaphore",
            Workload::QueuePairs => "queue-pairs",
            Workload::CounterAdd => "counter-add",
            Workload::ConfigPropagation => "config-propagation",
            Workload::DiscoveryExpiry => "discovery-expiry",
            Workload::SessionFailover => "session-failover",
            Workload::Sessions => "sessions",
        }
    }
}

/// How election followers watch (`--strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Strategy {
    /// Each follower watches its predecessor.
    Predecessor,
    /// Every follower watches the parent's children (comparison only).
    Herd,
    /// The race election (handoff-event only): every follower watches the one leader node
    /// and races to create it when it is deleted (comparison only).
    Race,
}

impl Strategy {
    /// The strategy's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Predecessor => "predecessor",
            Strategy::Herd => "herd",
            Strategy::Race => "race",
        }
    }
}

/// One benchmark run: the workload and every parameter any workload reads (each says which).
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The workload.
    pub workload: Workload,
    /// Concurrent sessions (create, set, get, mixed, churn, populate).
    pub sessions: usize,
    /// Requests outstanding per session (create, set, get, mixed, churn, populate).
    pub in_flight: usize,
    /// How long to run (all but populate and failover).
    pub duration: Duration,
    /// Bytes of data per write.
    pub data_bytes: usize,
    /// Nodes that set, get and mixed spread over.
    pub keys: usize,
    /// Znodes to create (populate).
    pub znodes: usize,
    /// Watching sessions (fanout, fanout-persistent); caches (config-propagation); at least 1.
    pub watchers: u64,
    /// Election participants (handoff, handoff-event, handoff-read, selector); lock
    /// contenders (mutex-handoff, semaphore); producers and consumers each (queue-pairs);
    /// clients (counter-add).
    pub participants: usize,
    /// Leases of the semaphore (semaphore); at least 1.
    pub leases: u32,
    /// Sessions the participants share (handoff), or the caches (config-propagation);
    /// `None`: one each.
    pub participant_sessions: Option<usize>,
    /// Idle time after each handoff before the next resign or delete (handoff, handoff-event,
    /// handoff-read), or after each write's last update (config-propagation); zero hands off
    /// back to back.
    pub gap: Duration,
    /// Follower watch strategy (handoff: predecessor or herd; handoff-event: predecessor or
    /// race).
    pub strategy: Strategy,
    /// Session timeout (failover, discovery-expiry, session-failover).
    pub session_timeout: Duration,
    /// Trials (failover, discovery-expiry).
    pub trials: usize,
    /// The process of the ensemble member to SIGKILL (session-failover).
    pub kill_pid: Option<u32>,
    /// Connect over TLS (create, set, get, mixed, churn, populate); `None`: plain TCP.
    pub tls: Option<TlsConfig>,
    /// The sessions workload's shape.
    pub many: ManySessions,
}

/// The sessions workload's shape (the rest of its settings: `sessions`, `duration`,
/// `session_timeout`).
#[derive(Debug, Clone)]
pub struct ManySessions {
    /// The parent of every session's ephemeral node.
    pub registry: String,
    /// Sessions whose watch on their node is persistent (the others re-arm a one-shot
    /// `exists`), percent.
    pub persistent_pct: u8,
    /// Sessions that read their node, percent.
    pub getters_pct: u8,
    /// How often each of those reads; zero: back to back, one read in flight each.
    pub get_interval: Duration,
    /// Sessions connecting at once; as many as `sessions` is a connection storm.
    pub connect_concurrency: usize,
    /// Sessions watching the whole registry for deletions (persistent, recursive).
    pub observers: usize,
    /// Deletions after which each observer stops and reports when it saw the last.
    pub expect_deleted: Option<u64>,
    /// Where to write every get's latency (microseconds, one per line), for a driver that
    /// pools several processes' samples.
    pub samples_out: Option<std::path::PathBuf>,
}

impl Default for ManySessions {
    fn default() -> Self {
        ManySessions {
            registry: "/rzk-bench/registry".into(),
            persistent_pct: 50,
            getters_pct: 10,
            get_interval: Duration::from_secs(1),
            connect_concurrency: 256,
            observers: 0,
            expect_deleted: None,
            samples_out: None,
        }
    }
}
