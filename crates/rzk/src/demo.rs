//! `rzk demo`: an in-process rzk server and the scenarios our users described, with measured
//! handoff and failover times. Needs no Java and no external server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use rzk_bench::stats::percentile;
use rzk_election::{
    LatchOptions, LeaderLatch, LeaderSelector, Leadership, SelectorOptions, Session, SessionConfig,
};
use tokio::net::{TcpListener, TcpStream};

use crate::cli::CliError;

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
}

struct Timeline {
    start: Instant,
}

impl Timeline {
    fn log(&self, what: impl std::fmt::Display) {
        let t = self.start.elapsed();
        println!("[{:>7.3}s] {what}", t.as_secs_f64());
    }
}

fn err(e: impl std::fmt::Display) -> CliError {
    CliError::runtime(format!("demo: {e}"))
}

async fn session(hosts: &str, timeout_ms: u64) -> Result<Session, CliError> {
    let cfg = SessionConfig::new(hosts).with_session_timeout(Duration::from_millis(timeout_ms));
    Session::connect(cfg).await.map_err(err)
}

/// A TCP proxy one candidate talks through, so the demo can cut it off like a crashed host.
pub(crate) struct Proxy {
    pub(crate) addr: SocketAddr,
    cut: Arc<AtomicBool>,
}

impl Proxy {
    pub(crate) async fn start(target: SocketAddr) -> Result<Proxy, CliError> {
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(err)?;
        let addr = listener.local_addr().map_err(err)?;
        let cut = Arc::new(AtomicBool::new(false));
        let flag = cut.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if flag.load(Ordering::SeqCst) {
                    continue; // dropped: the host is gone
                }
                let flag = flag.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else { return };
                    let copy = tokio::io::copy_bidirectional(&mut inbound, &mut outbound);
                    tokio::pin!(copy);
                    loop {
                        tokio::select! {
                            _ = &mut copy => return,
                            _ = tokio::time::sleep(Duration::from_millis(5)) => {
                                if flag.load(Ordering::SeqCst) { return; }
                            }
                        }
                    }
                });
            }
        });
        Ok(Proxy { addr, cut })
    }

    pub(crate) fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }
}

/// Waits until one of `latches` reports leadership; returns its index and term.
async fn next_leader(
    latches: &[(String, LeaderLatch)],
    skip: &[usize],
) -> Result<(usize, Leadership), CliError> {
    let waits = latches
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(i, (_, l))| Box::pin(async move { (i, l.await_leadership().await) }));
    let ((i, res), _, _) = futures_select_all(waits.collect()).await;
    Ok((i, res.map_err(err)?))
}

/// `select_all` without the futures crate.
async fn futures_select_all<F: std::future::Future + Unpin>(
    mut futs: Vec<F>,
) -> (F::Output, usize, Vec<F>) {
    std::future::poll_fn(move |cx| {
        for i in 0..futs.len() {
            if let std::task::Poll::Ready(out) = std::pin::Pin::new(&mut futs[i]).poll(cx) {
                let rest = std::mem::take(&mut futs);
                return std::task::Poll::Ready((out, i, rest));
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Runs the demo.
pub(crate) async fn run(a: DemoArgs) -> Result<(), CliError> {
    let t = Timeline { start: Instant::now() };
    let server = rzk_server::TestServer::builder().tick_ms(100).start().map_err(err)?;
    let hosts = server.connect_string();
    t.log(format_args!("rzk server running in process on {hosts}"));
    let n = a.candidates.max(3);
    let path = "/demo/scheduler";

    println!(
        "\n== 1. {n} candidates join a LeaderLatch at {path}; the lowest sequence number leads"
    );
    let mut sessions = Vec::new();
    let mut latches = Vec::new();
    for i in 0..n {
        let s = session(&hosts, a.session_timeout_ms).await?;
        let name = format!("candidate-{i}");
        let latch =
            LeaderLatch::new(&s, path, LatchOptions::default().with_id(&name)).map_err(err)?;
        let info = latch.start().await.map_err(err)?;
        t.log(format_args!("{name} joined as {}", info.node.rsplit('/').next().unwrap_or("")));
        sessions.push(s);
        latches.push((name, latch));
    }
    let (mut leader, mut term) = next_leader(&latches, &[]).await?;
    t.log(format_args!("{} leads with fencing token {}", latches[leader].0, term.token()));

    println!("\n== 2. each leader resigns after its work; the next in line takes over (seed 004)");
    let mut handoffs = Vec::new();
    let mut gone = Vec::new();
    for _ in 0..n - 2 {
        let resigned = Instant::now();
        let name = latches[leader].0.clone();
        let old_token = term.token();
        term.resign().await.map_err(err)?;
        gone.push(leader);
        t.log(format_args!("{name} finished its work and resigned"));
        let (next, next_term) = next_leader(&latches, &gone).await?;
        let took = resigned.elapsed();
        handoffs.push(took);
        t.log(format_args!(
            "{} took over in {:.2} ms (token {} > {})",
            latches[next].0,
            took.as_secs_f64() * 1e3,
            next_term.token(),
            old_token
        ));
        leader = next;
        term = next_term;
    }

    println!("\n== 3. a newcomer queues at the tail; the leader's host crashes (network cut)");
    let proxy = Proxy::start(server.addr()).await?;
    let crash_session = session(&proxy.addr.to_string(), a.session_timeout_ms).await?;
    let newcomer =
        LeaderLatch::new(&crash_session, path, LatchOptions::default().with_id("newcomer"))
            .map_err(err)?;
    newcomer.start().await.map_err(err)?;
    let queue = newcomer.participants().await.map_err(err)?;
    t.log(format_args!(
        "queue now: {}",
        queue.list.iter().map(|p| p.id.as_str()).collect::<Vec<_>>().join(" -> ")
    ));
    // Hand leadership to the newcomer by resigning the others, then crash it.
    let mut rest: Vec<usize> = (0..n).filter(|i| !gone.contains(i)).collect();
    rest.retain(|i| *i != leader);
    let _ = term.resign().await;
    gone.push(leader);
    t.log(format_args!("{} resigned", latches[leader].0));
    // The remaining original candidate(s) resign too, so the newcomer leads.
    for i in rest {
        if let Ok(Some(l)) =
            tokio::time::timeout(Duration::from_secs(5), latches[i].1.await_leadership())
                .await
                .map(|r| r.ok())
        {
            let _ = l.resign().await;
        }
        gone.push(i);
    }
    let nl = newcomer.await_leadership().await.map_err(err)?;
    t.log(format_args!("newcomer leads with token {}", nl.token()));
    let watcher_session = session(&hosts, a.session_timeout_ms).await?;
    let successor =
        LeaderLatch::new(&watcher_session, path, LatchOptions::default().with_id("successor"))
            .map_err(err)?;
    successor.start().await.map_err(err)?;
    let crashed_at = Instant::now();
    proxy.cut();
    t.log("newcomer's host is cut off the network (it can no longer reach the server)");
    let stepped = nl.lost();
    let successor_lead = successor.await_leadership();
    tokio::pin!(stepped, successor_lead);
    let (mut step_down, mut failover) = (None, None);
    while step_down.is_none() || failover.is_none() {
        tokio::select! {
            reason = &mut stepped, if step_down.is_none() => {
                let at = crashed_at.elapsed();
                t.log(format_args!("newcomer stopped acting on its own after {:.0} ms ({reason}), before the server could expire it", at.as_secs_f64() * 1e3));
                step_down = Some(at);
            }
            l = &mut successor_lead, if failover.is_none() => {
                let l = l.map_err(err)?;
                let at = crashed_at.elapsed();
                t.log(format_args!("successor leads after {:.0} ms (session timeout {} ms), token {} > {}", at.as_secs_f64() * 1e3, a.session_timeout_ms, l.token(), nl.token()));
                failover = Some(at);
            }
        }
    }
    let (step_down, failover) = (step_down.unwrap_or_default(), failover.unwrap_or_default());

    println!("\n== 4. a LeaderSelector rotates leadership in fair order (seed 001)");
    let order = Arc::new(Mutex::new(Vec::new()));
    // The first leader holds on until every worker has queued, so the rotation shows the
    // recipe's fairness rather than who happened to start first.
    let (go_tx, go_rx) = tokio::sync::watch::channel(false);
    let mut selectors = Vec::new();
    for i in 0..3 {
        let s = session(&hosts, a.session_timeout_ms).await?;
        let name = format!("worker-{i}");
        let opts = SelectorOptions::default().with_id(&name).with_auto_requeue(true);
        let sel = LeaderSelector::new(&s, "/demo/selector", opts).map_err(err)?;
        let (order, t0, go) = (order.clone(), t.start, go_rx.clone());
        let label = name.clone();
        sel.start(move |l: Leadership| {
            let (order, label, mut go) = (order.clone(), label.clone(), go.clone());
            async move {
                let _ = go.wait_for(|ready| *ready).await;
                order.lock().unwrap_or_else(|e| e.into_inner()).push(label.clone());
                println!(
                    "[{:>7.3}s] {label} leads (token {}), works 20 ms, gives up",
                    t0.elapsed().as_secs_f64(),
                    l.token()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok::<(), rzk_election::BoxError>(())
            }
        })
        .map_err(err)?;
        let queued = Instant::now() + Duration::from_secs(5);
        while sel.our_path().is_none() && Instant::now() < queued {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        selectors.push((s, sel));
    }
    let _ = go_tx.send(true);
    let deadline = Instant::now() + Duration::from_secs(20);
    while order.lock().unwrap_or_else(|e| e.into_inner()).len() < a.rotations
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The rotations the scenario asked for; leaderships taken while the selectors close one by
    // one below are teardown, not rotation, and are not judged.
    let mut order = order.lock().unwrap_or_else(|e| e.into_inner()).clone();
    order.truncate(a.rotations);
    for (_, sel) in selectors {
        let _ = sel.close().await;
    }

    println!("\n== summary");
    let mut h = handoffs.clone();
    h.sort();
    println!(
        "graceful handoffs: {}, p50 {:.2} ms, max {:.2} ms",
        h.len(),
        percentile(&h, 0.5).as_secs_f64() * 1e3,
        percentile(&h, 1.0).as_secs_f64() * 1e3
    );
    println!(
        "crash failover: {:.0} ms = {:.2} x the {} ms session timeout; the cut-off leader stopped itself after {:.0} ms",
        failover.as_secs_f64() * 1e3,
        failover.as_secs_f64() * 1e3 / a.session_timeout_ms as f64,
        a.session_timeout_ms,
        step_down.as_secs_f64() * 1e3
    );
    println!("selector rotation: {}", order.join(" -> "));
    // Fair: leadership cycles through the workers in the order they queued.
    let fair = order.len() >= 3
        && order.iter().enumerate().all(|(i, w)| *w == order[i % 3])
        && order[..3].iter().collect::<std::collections::BTreeSet<_>>().len() == 3;
    println!(
        "every term had one leader; tokens only grew; selector order {}",
        if fair { "fair" } else { "NOT fair" }
    );
    println!("done in {:.1}s", t.start.elapsed().as_secs_f64());
    if !fair || step_down >= failover {
        return Err(CliError::runtime("demo: an expectation failed (see above)"));
    }
    drop(server);
    Ok(())
}
