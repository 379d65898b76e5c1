//! The election workloads, on the recipes of rzk-recipes: LeaderLatch handoff latency at N
//! participants (predecessor or herd watching), LeaderSelector leaderships per second, and
//! crash failover.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_recipes::{
    election::{LatchOptions, LeaderLatch, LeaderSelector, SelectorOptions, WatchStrategy},
    session::{Session, SessionConfig},
};
use tokio::sync::{mpsc, watch};

use crate::config::{BenchConfig, Strategy, Workload};
use crate::error::BenchError;
use crate::report::ElectionReport;
use rzk_wirekit::proxy::Proxy;

/// The session timeout of the handoff and selector participants.
const PARTICIPANT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Participants started at once before the bench waits for them to be in the queue. Every join
/// reads the whole list (as Curator's does), so 10,000 joining together would queue seconds of
/// list parsing in this one process and starve its sessions' I/O past their timeouts.
const JOIN_WAVE: usize = 250;

/// How long all participants may take to join.
pub(crate) const JOIN_TIMEOUT: Duration = Duration::from_secs(600);

/// How long the bench waits for the next leader after a resign before it gives up: far above
/// any handoff (milliseconds at N = 10,000), and above the session timeout a participant
/// whose resign failed would take to lose its node.
const HANDOFF_WAIT_S_MAX: u64 = 30;

/// How long participants get to publish their watch counts when asked.
const PUBLISH_WAIT: Duration = Duration::from_millis(300);

pub(crate) async fn session(hosts: &str, timeout: Duration) -> Result<Session, BenchError> {
    let cfg = SessionConfig::new(hosts).with_session_timeout(timeout);
    Ok(Session::connect(cfg).await?)
}

/// Waits until `n` nodes are under `path`. Counted with a bare getChildren: `participants()`
/// reads every node's data, which at N = 10,000 would load the server more than the joins.
pub(crate) async fn wait_joined(
    session: &Session,
    path: &str,
    n: usize,
    deadline: Instant,
) -> Result<(), BenchError> {
    loop {
        let client = session.client()?;
        match client.list_children(path).await {
            Ok(c) if c.len() >= n => return Ok(()),
            Ok(_) | Err(rzk_client::Error::NoNode) => {}
            Err(e) => return Err(e.into()),
        }
        if Instant::now() > deadline {
            let s = JOIN_TIMEOUT.as_secs();
            return Err(BenchError::stopped(format!("{n} participants did not join within {s} s")));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next participant to lead, and when it learnt it; an error naming the failed calls if
/// none leads within [`HANDOFF_WAIT_S_MAX`].
async fn next_leader(
    rx: &mut mpsc::UnboundedReceiver<(usize, Instant)>,
    errors: &AtomicU64,
) -> Result<(usize, Instant), BenchError> {
    let wait = Duration::from_secs(HANDOFF_WAIT_S_MAX);
    let failures = || format!("{} election calls failed", errors.load(Ordering::Relaxed));
    match tokio::time::timeout(wait, rx.recv()).await {
        Ok(Some(led)) => Ok(led),
        Ok(None) => Err(BenchError::stopped(format!("every participant stopped; {}", failures()))),
        Err(_) => Err(BenchError::stopped(format!(
            "no participant became leader within {HANDOFF_WAIT_S_MAX} s; {}",
            failures()
        ))),
    }
}

/// What every handoff participant shares with the coordinator.
#[derive(Clone)]
struct Shared {
    path: String,
    strategy: WatchStrategy,
    /// Each participant's leadership, as (participant, when it learnt it).
    led: mpsc::UnboundedSender<(usize, Instant)>,
    /// Wakeups (watch events that woke a follower) of every participant, published when
    /// asked, so herd and predecessor are counted alike.
    wakeups: Arc<Vec<AtomicU64>>,
    /// Asks the participants to publish their counts (only then: measuring adds no load).
    publish: watch::Receiver<u64>,
    /// When the current leader began to resign.
    resign_started: Arc<Mutex<Option<Instant>>>,
    /// Election calls that failed.
    errors: Arc<AtomicU64>,
}

impl Shared {
    /// Participant `i` on `session`: joins, leads when its turn comes, and on each message of
    /// `resign` resigns, then (on the next) rejoins at the tail. A participant that fails
    /// stops; the error count says why the run then stalls or is short.
    async fn participant(
        self,
        i: usize,
        session: Arc<Session>,
        mut resign: mpsc::UnboundedReceiver<()>,
    ) {
        let failed = || {
            self.errors.fetch_add(1, Ordering::Relaxed);
        };
        let mut publish = self.publish.clone();
        let mut carried = 0;
        loop {
            let opts =
                LatchOptions::default().with_id(format!("p{i}")).with_strategy(self.strategy);
            let Ok(latch) = LeaderLatch::new(&session, &self.path, opts) else { return failed() };
            if latch.start().await.is_err() {
                return failed();
            }
            let l = loop {
                tokio::select! {
                    l = latch.await_leadership() => break l,
                    Ok(()) = publish.changed() => {
                        let now = carried + latch.metrics().wakeups;
                        self.wakeups[i].store(now, Ordering::Relaxed);
                    }
                }
            };
            let Ok(l) = l else { return failed() };
            let _ = self.led.send((i, Instant::now()));
            carried += latch.metrics().wakeups;
            self.wakeups[i].store(carried, Ordering::Relaxed);
            if resign.recv().await.is_none() {
                return;
            }
            *self.resign_started.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            if l.resign().await.is_err() {
                failed();
            }
            // Rejoin only once the successor leads, as the Curator harness does: the
            // rejoin's writes do not race the handoff being measured.
            if resign.recv().await.is_none() {
                return;
            }
        }
    }
}

/// LeaderLatch handoff: the leader resigns and rejoins at the tail, again and again; latency
/// from the resign to the successor learning it leads, and watch notifications received by
/// all participants per change.
pub(crate) async fn handoff(cfg: &BenchConfig, hosts: &str) -> Result<ElectionReport, BenchError> {
    let participants = cfg.participants;
    let path = format!("/bench-election/h{}", std::process::id());
    let nsessions = cfg.participant_sessions.unwrap_or(participants).clamp(1, participants.max(1));
    let mut sessions = Vec::new();
    for _ in 0..nsessions {
        sessions.push(Arc::new(session(hosts, PARTICIPANT_SESSION_TIMEOUT).await?));
    }
    let (led_tx, mut led_rx) = mpsc::unbounded_channel();
    let (publish_tx, publish_rx) = watch::channel(0u64);
    let shared = Shared {
        path: path.clone(),
        strategy: match cfg.strategy {
            Strategy::Predecessor => WatchStrategy::Predecessor,
            Strategy::Herd => WatchStrategy::Herd,
            Strategy::Race => return Err(BenchError::Strategy(Workload::Handoff, Strategy::Race)),
        },
        led: led_tx,
        wakeups: Arc::new((0..participants).map(|_| AtomicU64::new(0)).collect()),
        publish: publish_rx,
        resign_started: Arc::new(Mutex::new(None)),
        errors: Arc::new(AtomicU64::new(0)),
    };
    let mut resign_txs = Vec::new();
    let join_deadline = Instant::now() + JOIN_TIMEOUT;
    for i in 0..participants {
        if i > 0 && i % JOIN_WAVE == 0 {
            wait_joined(&sessions[0], &path, i, join_deadline).await?;
        }
        let (rtx, rrx) = mpsc::unbounded_channel();
        resign_txs.push(rtx);
        tokio::spawn(shared.clone().participant(i, sessions[i % nsessions].clone(), rrx));
    }
    // Only the participants hold senders now, so a run whose every participant has failed
    // ends at once.
    let Shared { wakeups, resign_started, errors, led, .. } = shared;
    drop(led);
    let total_wakeups = || wakeups.iter().map(|a| a.load(Ordering::Relaxed)).sum::<u64>();
    // Everyone must have joined before the measurement starts.
    let (first, _) = next_leader(&mut led_rx, &errors).await?;
    wait_joined(&sessions[0], &path, participants, join_deadline).await?;
    let _ = publish_tx.send(1);
    tokio::time::sleep(PUBLISH_WAIT).await;
    let baseline = total_wakeups();
    let mut samples = Vec::new();
    let mut leader = first;
    let started = Instant::now();
    while started.elapsed() < cfg.duration {
        let _ = resign_txs[leader].send(());
        let (next, at) = next_leader(&mut led_rx, &errors).await?;
        let t0 = resign_started.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or(at);
        samples.push(at.saturating_duration_since(t0).as_micros() as u64);
        let _ = resign_txs[leader].send(()); // rejoin at the tail
        leader = next;
        if !cfg.gap.is_zero() {
            tokio::time::sleep(cfg.gap).await;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    // Ask for the final counts and let them be published.
    let _ = publish_tx.send(2);
    tokio::time::sleep(PUBLISH_WAIT).await;
    let rounds = samples.len();
    let per_change = (total_wakeups() - baseline) as f64 / rounds.max(1) as f64;
    drop(resign_txs);
    Ok(ElectionReport {
        workload: Workload::Handoff,
        participants,
        strategy: cfg.strategy.name(),
        rounds,
        seconds,
        samples_us: samples,
        notifications_per_change: per_change,
        errors: errors.load(Ordering::Relaxed),
    })
}

/// LeaderSelector with auto-requeue and an empty task: leaderships per second.
pub(crate) async fn selector(cfg: &BenchConfig, hosts: &str) -> Result<ElectionReport, BenchError> {
    let path = format!("/bench-election/s{}", std::process::id());
    let count = Arc::new(AtomicU64::new(0));
    let mut keep = Vec::new();
    for i in 0..cfg.participants.max(1) {
        let s = session(hosts, PARTICIPANT_SESSION_TIMEOUT).await?;
        let opts = SelectorOptions::default().with_id(format!("s{i}")).with_auto_requeue(true);
        let sel = LeaderSelector::new(&s, &path, opts)?;
        let c = count.clone();
        sel.start(move |_l| {
            let c = c.clone();
            async move {
                c.fetch_add(1, Ordering::Relaxed);
                Ok::<(), rzk_recipes::BoxError>(())
            }
        })?;
        keep.push((s, sel));
    }
    let start_count = count.load(Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(cfg.duration).await;
    let rounds = (count.load(Ordering::Relaxed) - start_count) as usize;
    let seconds = started.elapsed().as_secs_f64();
    let mut errors = 0;
    for (_, sel) in keep {
        errors += u64::from(sel.close().await.is_err());
    }
    Ok(ElectionReport {
        workload: Workload::Selector,
        participants: cfg.participants,
        strategy: Strategy::Predecessor.name(),
        rounds,
        seconds,
        samples_us: Vec::new(),
        notifications_per_change: 0.0,
        errors,
    })
}

/// Crash failover: the leader's network is cut (a crash, as far as the server can tell);
/// time until the successor leads, per trial.
pub(crate) async fn failover(cfg: &BenchConfig, hosts: &str) -> Result<ElectionReport, BenchError> {
    let target: std::net::SocketAddr = hosts
        .split(',')
        .next()
        .and_then(|h| h.parse().ok())
        .ok_or_else(|| BenchError::FailoverTarget(hosts.to_owned()))?;
    let timeout = cfg.session_timeout;
    let mut samples = Vec::new();
    let started = Instant::now();
    for t in 0..cfg.trials.max(1) {
        let path = format!("/bench-election/f{}-{t}", std::process::id());
        let proxy = Proxy::start(target)?;
        let victim = session(&proxy.hosts(), timeout).await?;
        let a = LeaderLatch::new(&victim, &path, LatchOptions::default().with_id("victim"))?;
        a.start().await?;
        a.await_leadership().await?;
        let survivor = session(hosts, timeout).await?;
        let b = LeaderLatch::new(&survivor, &path, LatchOptions::default().with_id("survivor"))?;
        b.start().await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let cut = Instant::now();
        proxy.cut();
        b.await_leadership().await?;
        samples.push(cut.elapsed().as_micros() as u64);
        drop(a);
        let _ = b.close().await;
    }
    let seconds = started.elapsed().as_secs_f64();
    // Any failed call ends the run with its error instead: no errors to count.
    let strategy = Strategy::Predecessor.name();
    Ok(ElectionReport::timed(Workload::Failover, 2, strategy, seconds, samples, 0))
}
