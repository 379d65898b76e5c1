//! Election workloads of `rzk bench`: handoff latency at N participants, selector leaderships
//! per second, crash failover, and herd against predecessor watching.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_bench::stats::percentile;
use rzk_election::{
    LatchOptions, LeaderLatch, LeaderSelector, SelectorOptions, Session, SessionConfig,
    WatchStrategy,
};
use tokio::sync::mpsc;

use crate::cli::CliError;
use crate::demo::Proxy;

fn err(e: impl std::fmt::Display) -> CliError {
    CliError::runtime(format!("bench: {e}"))
}

async fn session(hosts: &str, timeout_ms: u64) -> Result<Session, CliError> {
    let cfg = SessionConfig::new(hosts).with_session_timeout(Duration::from_millis(timeout_ms));
    Session::connect(cfg).await.map_err(err)
}

/// Results of an election workload.
pub(crate) struct ElectionResult {
    pub rounds: usize,
    pub seconds: f64,
    pub samples_us: Vec<u64>,
    pub notifications_per_change: f64,
    /// Election calls that failed (a participant that could not join, wait or resign).
    pub errors: u64,
}

impl ElectionResult {
    pub(crate) fn print(mut self, workload: &str, participants: usize, strategy: &str, json: bool) {
        let v = &mut self.samples_us;
        v.sort_unstable();
        let (p50, p99, p999) = (percentile(v, 0.5), percentile(v, 0.99), percentile(v, 0.999));
        let per_s = self.rounds as f64 / self.seconds;
        if json {
            println!(
                "{{\"workload\":\"{workload}\",\"participants\":{participants},\"strategy\":\"{strategy}\",\"rounds\":{},\"seconds\":{:.3},\"per_s\":{per_s:.1},\"p50_us\":{p50},\"p99_us\":{p99},\"p999_us\":{p999},\"notifications_per_change\":{:.2},\"errors\":{}}}",
                self.rounds, self.seconds, self.notifications_per_change, self.errors
            );
        } else {
            println!(
                "{workload} ({participants} participants, {strategy}): {} rounds in {:.2}s = {per_s:.1}/s; p50 {p50} us, p99 {p99} us, p999 {p999} us; {:.2} notifications per change; {} errors",
                self.rounds, self.seconds, self.notifications_per_change, self.errors
            );
        }
    }
}

/// Participants started at once before the bench waits for them to be in the queue. Every join
/// reads the whole list (as Curator's does), so 10,000 joining together would queue seconds of
/// list parsing in this one process and starve its sessions' I/O past their timeouts.
const JOIN_WAVE: usize = 250;

/// How long the bench waits for the next leader after a resign before it gives up: far above
/// any handoff (milliseconds at N = 10,000), and above the 10 s session timeout a participant
/// whose resign failed would take to lose its node.
const HANDOFF_WAIT_S_MAX: u64 = 30;

/// Waits until `n` nodes are under `path`. Counted with a bare getChildren: `participants()`
/// reads every node's data, which at N = 10,000 would load the server more than the joins.
async fn wait_joined(
    session: &Session,
    path: &str,
    n: usize,
    deadline: Instant,
) -> Result<(), CliError> {
    loop {
        let client = session.client().map_err(err)?;
        match client.list_children(path).await {
            Ok(c) if c.len() >= n => return Ok(()),
            Ok(_) | Err(zookeeper_client::Error::NoNode) => {}
            Err(e) => return Err(err(e)),
        }
        if Instant::now() > deadline {
            return Err(err(format!("{n} participants did not join within 600 s")));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next participant to lead, and when it learnt it; an error naming the failed calls if
/// none leads within [`HANDOFF_WAIT_S_MAX`].
async fn next_leader(
    rx: &mut mpsc::UnboundedReceiver<(usize, Instant)>,
    errors: &AtomicU64,
) -> Result<(usize, Instant), CliError> {
    let wait = Duration::from_secs(HANDOFF_WAIT_S_MAX);
    let failures = || format!("{} election calls failed", errors.load(Ordering::Relaxed));
    match tokio::time::timeout(wait, rx.recv()).await {
        Ok(Some(led)) => Ok(led),
        Ok(None) => Err(err(format!("every participant stopped; {}", failures()))),
        Err(_) => Err(err(format!(
            "no participant became leader within {HANDOFF_WAIT_S_MAX} s; {}",
            failures()
        ))),
    }
}

/// Leader resigns and rejoins at the tail, again and again; latency from the resign to the
/// successor learning it leads, and watch notifications received by all participants per
/// change.
pub(crate) async fn handoff(
    hosts: &str,
    participants: usize,
    sessions: usize,
    strategy: WatchStrategy,
    duration: Duration,
    gap: Duration,
) -> Result<ElectionResult, CliError> {
    let path = format!("/bench-election/h{}", std::process::id());
    let nsessions = sessions.clamp(1, participants.max(1));
    let mut shared = Vec::new();
    for _ in 0..nsessions {
        shared.push(Arc::new(session(hosts, 10_000).await?));
    }
    // Wakeups (watch events that woke a follower) of every participant, published as they
    // accrue, so herd and predecessor are counted alike.
    let wakeups: Arc<Vec<AtomicU64>> =
        Arc::new((0..participants).map(|_| AtomicU64::new(0)).collect());
    let (led_tx, mut led_rx) = mpsc::unbounded_channel::<(usize, Instant)>();
    let errors = Arc::new(AtomicU64::new(0));
    // Participants publish their counts only when asked, so the measuring adds no load.
    let (publish_tx, publish_rx) = tokio::sync::watch::channel(0u64);
    let resign_started = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let mut resign_txs = Vec::new();
    let join_deadline = Instant::now() + Duration::from_secs(600);
    for i in 0..participants {
        if i > 0 && i % JOIN_WAVE == 0 {
            wait_joined(&shared[0], &path, i, join_deadline).await?;
        }
        let s = shared[i % nsessions].clone();
        let (rtx, mut rrx) = mpsc::unbounded_channel::<()>();
        resign_txs.push(rtx);
        let (led_tx, path, wakeups, started) =
            (led_tx.clone(), path.clone(), wakeups.clone(), resign_started.clone());
        let errors = errors.clone();
        // A participant that fails stops; the count says why the run then stalls or is short.
        let failed = move || {
            errors.fetch_add(1, Ordering::Relaxed);
        };
        let mut publish = publish_rx.clone();
        tokio::spawn(async move {
            let mut carried = 0;
            loop {
                let opts = LatchOptions::default().with_id(format!("p{i}")).with_strategy(strategy);
                let Ok(latch) = LeaderLatch::new(&s, &path, opts) else { return failed() };
                if latch.start().await.is_err() {
                    return failed();
                }
                let l = loop {
                    tokio::select! {
                        l = latch.await_leadership() => break l,
                        Ok(()) = publish.changed() => wakeups[i].store(carried + latch.metrics().wakeups, Ordering::Relaxed),
                    }
                };
                let Ok(l) = l else { return failed() };
                let _ = led_tx.send((i, Instant::now()));
                carried += latch.metrics().wakeups;
                wakeups[i].store(carried, Ordering::Relaxed);
                if rrx.recv().await.is_none() {
                    return;
                }
                *started.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                if l.resign().await.is_err() {
                    failed();
                }
                // Rejoin only once the successor leads, as the Curator harness does: the
                // rejoin's writes do not race the handoff being measured.
                if rrx.recv().await.is_none() {
                    return;
                }
            }
        });
    }
    // Only the participants hold senders now, so a run whose every participant has failed
    // ends at once.
    drop(led_tx);
    // Everyone must have joined before the measurement starts.
    let (first, _) = next_leader(&mut led_rx, &errors).await?;
    wait_joined(&shared[0], &path, participants, join_deadline).await?;
    let total = |w: &Arc<Vec<AtomicU64>>| w.iter().map(|a| a.load(Ordering::Relaxed)).sum::<u64>();
    let _ = publish_tx.send(1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let baseline = total(&wakeups);
    let mut samples = Vec::new();
    let mut leader = first;
    let started = Instant::now();
    while started.elapsed() < duration {
        let _ = resign_txs[leader].send(());
        let (next, at) = next_leader(&mut led_rx, &errors).await?;
        let t0 = resign_started.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or(at);
        samples.push(at.saturating_duration_since(t0).as_micros() as u64);
        let _ = resign_txs[leader].send(()); // rejoin at the tail
        leader = next;
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    // Ask for the final counts and let them be published.
    let _ = publish_tx.send(2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rounds = samples.len();
    let per_change = (total(&wakeups) - baseline) as f64 / rounds.max(1) as f64;
    drop(resign_txs);
    Ok(ElectionResult {
        rounds,
        seconds,
        samples_us: samples,
        notifications_per_change: per_change,
        errors: errors.load(Ordering::Relaxed),
    })
}

/// LeaderSelector with auto-requeue and an empty task: leaderships per second.
pub(crate) async fn selector(
    hosts: &str,
    participants: usize,
    duration: Duration,
) -> Result<ElectionResult, CliError> {
    let path = format!("/bench-election/s{}", std::process::id());
    let count = Arc::new(AtomicU64::new(0));
    let mut keep = Vec::new();
    for i in 0..participants.max(1) {
        let s = session(hosts, 10_000).await?;
        let opts = SelectorOptions::default().with_id(format!("s{i}")).with_auto_requeue(true);
        let sel = LeaderSelector::new(&s, &path, opts).map_err(err)?;
        let c = count.clone();
        sel.start(move |_l| {
            let c = c.clone();
            async move {
                c.fetch_add(1, Ordering::Relaxed);
                Ok::<(), rzk_election::BoxError>(())
            }
        })
        .map_err(err)?;
        keep.push((s, sel));
    }
    let start_count = count.load(Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    let rounds = (count.load(Ordering::Relaxed) - start_count) as usize;
    let seconds = started.elapsed().as_secs_f64();
    let mut errors = 0;
    for (_, sel) in keep {
        errors += u64::from(sel.close().await.is_err());
    }
    Ok(ElectionResult {
        rounds,
        seconds,
        samples_us: Vec::new(),
        notifications_per_change: 0.0,
        errors,
    })
}

/// The leader's network is cut (a crash, as far as the server can tell); time until the
/// successor leads, in microseconds, per trial.
pub(crate) async fn failover(
    hosts: &str,
    timeout_ms: u64,
    trials: usize,
) -> Result<ElectionResult, CliError> {
    let target: std::net::SocketAddr =
        hosts.split(',').next().and_then(|h| h.parse().ok()).ok_or_else(|| {
            CliError::usage(format!("failover needs --connect as one ip:port, got {hosts}"))
        })?;
    let mut samples = Vec::new();
    let started = Instant::now();
    for t in 0..trials.max(1) {
        let path = format!("/bench-election/f{}-{t}", std::process::id());
        let proxy = Proxy::start(target).await?;
        let victim = session(&proxy.addr.to_string(), timeout_ms).await?;
        let a = LeaderLatch::new(&victim, &path, LatchOptions::default().with_id("victim"))
            .map_err(err)?;
        a.start().await.map_err(err)?;
        a.await_leadership().await.map_err(err)?;
        let survivor = session(hosts, timeout_ms).await?;
        let b = LeaderLatch::new(&survivor, &path, LatchOptions::default().with_id("survivor"))
            .map_err(err)?;
        b.start().await.map_err(err)?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let cut = Instant::now();
        proxy.cut();
        b.await_leadership().await.map_err(err)?;
        samples.push(cut.elapsed().as_micros() as u64);
        drop(a);
        let _ = b.close(None).await;
    }
    Ok(ElectionResult {
        rounds: samples.len(),
        seconds: started.elapsed().as_secs_f64(),
        samples_us: samples,
        notifications_per_change: 0.0,
        // Any failed call ends the run with its error instead.
        errors: 0,
    })
}
