//! `rzk bench`: load any server that speaks the ZooKeeper protocol.
//!
//! Every session is a raw, pipelined connection keeping `--in-flight` requests outstanding, so
//! the tool itself is cheap and loads Apache ZooKeeper and rzk identically. Latency is measured
//! per request from send to reply (for `fanout`, from the write to the last notification).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use rzk_bench::stats::percentile;
use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    split_frame, Acl, ConnectRequest, CreateOp, CreateRequest, PathWatch, ReplyHeader, Request,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::cli::{CliError, Connect};

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Workload {
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
    /// and rejoins at the tail. Latency from the delete to the successor's event.
    HandoffEvent,
    /// As handoff-event, but the successor then lists the election's children, as a recipe
    /// that checks before it claims does (Curator's LeaderLatch, rzk-election); latency from
    /// the delete to that list's reply: the protocol's floor under a LeaderLatch handoff.
    HandoffRead,
    /// LeaderSelector leaderships per second (auto-requeue, empty task).
    Selector,
    /// Crash failover: the leader's network is cut; time to the successor's leadership.
    Failover,
}

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
    /// Watching sessions (fanout).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    watchers: u64,
    /// Election participants (handoff, handoff-event, selector).
    #[arg(long, default_value_t = 5)]
    pub(crate) participants: usize,
    /// Sessions the participants share (handoff); default one each.
    #[arg(long)]
    participant_sessions: Option<usize>,
    /// Idle time after each handoff before the next resign or delete (handoff,
    /// handoff-event), ms: the old leader's rejoin is then out of the way. 0 hands off back to
    /// back.
    #[arg(long, default_value_t = 0)]
    pub(crate) gap_ms: u64,
    /// Follower watch strategy (handoff): predecessor, or herd for comparison.
    #[arg(long, value_enum, default_value_t = Strategy::Predecessor)]
    strategy: Strategy,
    /// Session timeout (failover), ms.
    #[arg(long, default_value_t = 4_000)]
    session_timeout_ms: u64,
    /// Trials (failover).
    #[arg(long, default_value_t = 10)]
    trials: usize,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// How election followers watch (`--strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Strategy {
    /// Each follower watches its predecessor.
    Predecessor,
    /// Every follower watches the parent's children (comparison only).
    Herd,
}

pub(crate) type Io = (BufReader<OwnedReadHalf>, OwnedWriteHalf);

pub(crate) fn err(e: impl std::fmt::Display) -> CliError {
    CliError::runtime(format!("bench: {e}"))
}

pub(crate) async fn connect(hosts: &str) -> Result<Io, CliError> {
    let addr = hosts.split(',').next().unwrap_or(hosts).split('/').next().unwrap_or(hosts);
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| CliError::usage(format!("cannot connect to {addr}: {e}")))?;
    stream.set_nodelay(true).map_err(err)?;
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::with_capacity(256 * 1024, r);
    let mut f = Writer::frame();
    ConnectRequest::new_session(30_000).write(&mut f);
    w.write_all(&f.finish_frame()).await.map_err(err)?;
    // A server that refuses a connection (ZooKeeper and rzk alike, at maxClientCnxns) just
    // closes it, which would otherwise surface as a bare "unexpected end of file".
    read_frame(&mut r).await.map_err(|e| {
        err(format!(
            "{addr} closed the connection before answering the session request ({}); a \
             connection limit such as maxClientCnxns (default 60 per address) refuses this way: \
             for many sessions start rzk server with --max-client-cnxns 0",
            e.message.trim_start_matches("bench: ")
        ))
    })?;
    Ok((r, w))
}

/// A frame's body length, checked.
pub(crate) fn frame_len(len: i32) -> Result<usize, CliError> {
    match usize::try_from(len) {
        Ok(n) if n <= 16 * 1024 * 1024 => Ok(n),
        _ => Err(err(format!("bad frame length {len}"))),
    }
}

async fn read_frame(r: &mut BufReader<OwnedReadHalf>) -> Result<Vec<u8>, CliError> {
    let mut buf = vec![0; frame_len(r.read_i32().await.map_err(err)?)?];
    r.read_exact(&mut buf).await.map_err(err)?;
    Ok(buf)
}

pub(crate) fn create(path: String, data: Vec<u8>, flags: i32) -> Request {
    Request::Create(CreateRequest {
        op: CreateOp::Create,
        path,
        data: Some(data),
        acl: Acl::open(),
        flags,
        ttl_ms: -1,
    })
}

/// Runs requests one at a time (set-up work).
pub(crate) async fn call(io: &mut Io, req: &Request) -> Result<i32, CliError> {
    io.1.write_all(&req.to_frame(1)).await.map_err(err)?;
    loop {
        let f = read_frame(&mut io.0).await?;
        let h = ReplyHeader::read(&mut Reader::new(&f)).map_err(err)?;
        if h.xid != -1 {
            return Ok(h.err);
        }
    }
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) latencies_us: Vec<u32>,
    errors: u64,
}

enum Pending {
    Op(Instant),
    /// Churn: the create half; the delete follows.
    ChurnCreate(Instant, String),
}

/// One pipelined session running `workload` until `stop` (or until `quota` ops are done).
async fn session_loop(
    mut io: Io,
    a: Arc<BenchArgs>,
    id: usize,
    stop: Arc<AtomicBool>,
    quota: Option<(usize, usize)>,
) -> Result<Stats, CliError> {
    let mut stats = Stats::default();
    let mut rng = Rng(0x9e37_79b9 ^ ((id as u64 + 1) * 0x2545_f491));
    let mut window: VecDeque<Pending> = VecDeque::with_capacity(a.in_flight * 2);
    let mut out = Vec::with_capacity(64 * 1024);
    let data = vec![b'x'; a.data_bytes];
    let mut xid = 0i32;
    let mut issued = 0usize;
    let (first, count) = quota.unwrap_or((0, usize::MAX));
    loop {
        let stopping = stop.load(Ordering::Relaxed) || issued >= count;
        while !stopping && window.len() < a.in_flight && issued < count {
            xid = xid.wrapping_add(1).max(1);
            let (req, pending) = match a.workload {
                Workload::Create => {
                    (create("/bench/c-".into(), data.clone(), 2), Pending::Op(Instant::now()))
                }
                Workload::Set => (
                    Request::SetData {
                        path: format!("/bench/k{}", rng.below(a.keys)),
                        data: Some(data.clone()),
                        version: -1,
                    },
                    Pending::Op(Instant::now()),
                ),
                Workload::Get => (
                    Request::GetData(PathWatch {
                        path: format!("/bench/k{}", rng.below(a.keys)),
                        watch: false,
                    }),
                    Pending::Op(Instant::now()),
                ),
                Workload::Mixed if rng.below(10) == 0 => (
                    Request::SetData {
                        path: format!("/bench/k{}", rng.below(a.keys)),
                        data: Some(data.clone()),
                        version: -1,
                    },
                    Pending::Op(Instant::now()),
                ),
                Workload::Mixed => (
                    Request::GetData(PathWatch {
                        path: format!("/bench/k{}", rng.below(a.keys)),
                        watch: false,
                    }),
                    Pending::Op(Instant::now()),
                ),
                Workload::Churn => {
                    let p = format!("/bench/e{id}-{issued}");
                    (create(p.clone(), data.clone(), 1), Pending::ChurnCreate(Instant::now(), p))
                }
                Workload::Populate => {
                    let n = first + issued;
                    (
                        create(format!("/bench/p{}/n{n}", n % 1000), vec![7; 16], 0),
                        Pending::Op(Instant::now()),
                    )
                }
                Workload::Fanout
                | Workload::FanoutPersistent
                | Workload::Handoff
                | Workload::HandoffEvent
                | Workload::HandoffRead
                | Workload::Selector
                | Workload::Failover => {
                    unreachable!("these have their own loops")
                }
            };
            out.extend_from_slice(&req.to_frame(xid));
            window.push_back(pending);
            issued += 1;
        }
        // Replies already read count first: one write for the requests they make room for,
        // instead of one per reply (the load generator shares the server's two cores).
        // (A bad length is left for read_frame to report.)
        if !out.is_empty() && !matches!(split_frame(io.0.buffer(), usize::MAX), Ok(Some(_))) {
            io.1.write_all(&out).await.map_err(err)?;
            out.clear();
        }
        let Some(_) = window.front() else { break };
        let f = read_frame(&mut io.0).await?;
        let h = ReplyHeader::read(&mut Reader::new(&f)).map_err(err)?;
        if h.xid == -1 {
            continue;
        }
        if h.err != 0 {
            stats.errors += 1;
        }
        match window.pop_front().expect("front checked") {
            Pending::Op(t0) => {
                stats.latencies_us.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32)
            }
            Pending::ChurnCreate(t0, path) => {
                xid = xid.wrapping_add(1).max(1);
                out.extend_from_slice(&Request::Delete { path, version: -1 }.to_frame(xid));
                window.push_back(Pending::Op(t0));
            }
        }
    }
    Ok(stats)
}

/// Progress of a fan-out's watchers, as running totals over all rounds. A watcher arms and is
/// notified once per round, in that order, so round `r` is armed when `armed` reaches
/// `watchers * (r + 1)` and complete when `notified` does.
struct FanProgress {
    watchers: u64,
    armed: AtomicU64,
    notified: AtomicU64,
    /// Woken by the watcher whose count completes a round's total: one wake-up of the setter
    /// per phase instead of one per watcher (a channel message per arm and per event made the
    /// load generator's own CPU, on the same two cores, a large part of every round).
    done: Notify,
}

impl FanProgress {
    fn add(&self, counter: &AtomicU64) {
        if (counter.fetch_add(1, Ordering::SeqCst) + 1) % self.watchers == 0 {
            self.done.notify_one();
        }
    }

    /// Waits until `counter` reaches `total`; an error if 10 s pass without a phase completing
    /// (one watcher that never answers stalls every round, so the run stops instead).
    async fn wait(&self, counter: &AtomicU64, total: u64, what: &str) -> Result<(), CliError> {
        loop {
            // `notify_one` leaves a permit when no one waits, so a round completed between the
            // load and the wait is not missed; a stale permit only costs one more check.
            let done = self.done.notified();
            if counter.load(Ordering::SeqCst) >= total {
                return Ok(());
            }
            if tokio::time::timeout(Duration::from_secs(10), done).await.is_err() {
                return Err(err(what));
            }
        }
    }
}

/// `fanout`: rounds of one write and `watchers` notifications.
async fn fanout(a: &BenchArgs, hosts: &str, deadline: Instant) -> Result<Stats, CliError> {
    let mut setter = connect(hosts).await?;
    call(&mut setter, &create("/bench/fan".into(), vec![], 0)).await?;
    let progress = Arc::new(FanProgress {
        watchers: a.watchers,
        armed: AtomicU64::new(0),
        notified: AtomicU64::new(0),
        done: Notify::new(),
    });
    let persistent = a.workload == Workload::FanoutPersistent;
    let mut tasks = Vec::new();
    for _ in 0..a.watchers {
        let mut io = connect(hosts).await?;
        if persistent {
            // Registered here, not in the task, so that a server without addWatch (ZooKeeper
            // before 3.6) fails the run with its error instead of a stalled round.
            let add = Request::AddWatch { path: "/bench/fan".into(), mode: ADD_WATCH_PERSISTENT };
            match call(&mut io, &add).await? {
                0 => {}
                e => return Err(err(format!("addWatch failed with error {e}"))),
            }
        }
        let progress = progress.clone();
        tasks.push(tokio::spawn(async move {
            if persistent {
                persistent_watcher(io, &progress).await
            } else {
                one_shot_watcher(io, &progress).await
            }
        }));
    }
    let mut stats = Stats::default();
    let data = vec![b'x'; a.data_bytes];
    let mut total = 0;
    while Instant::now() < deadline {
        total += progress.watchers;
        progress.wait(&progress.armed, total, "watchers stopped arming").await?;
        let t0 = Instant::now();
        call(
            &mut setter,
            &Request::SetData { path: "/bench/fan".into(), data: Some(data.clone()), version: -1 },
        )
        .await?;
        progress.wait(&progress.notified, total, "notifications stopped").await?;
        stats.latencies_us.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
    }
    for t in tasks {
        t.abort();
    }
    Ok(stats)
}

/// A fan-out watcher on one-shot watches: it re-arms (a getData with a watch) on every event.
/// It returns on the first unexpected frame or error, which stalls the rounds and so ends the
/// run with the setter's timeout.
async fn one_shot_watcher(mut io: Io, progress: &FanProgress) {
    let arm = Request::GetData(PathWatch { path: "/bench/fan".into(), watch: true }).to_frame(1);
    for round in 0u64.. {
        // From the second round on, the re-arm goes out as soon as the event's bytes
        // arrive, before they are read, so that it carries their ACK. Read first, the
        // event (the second small segment since this side last sent) makes the kernel
        // acknowledge at once with a packet of its own: one per watcher and round,
        // 11-24% of the load generator's CPU on the cores it shares with the server. A
        // peek leaves the bytes queued, which defers that ACK. The server sees the same
        // requests in the same order.
        let armed = round > 0;
        if armed && io.0.buffer().is_empty() && io.0.get_mut().peek(&mut [0; 1]).await.is_err() {
            return;
        }
        if io.1.write_all(&arm).await.is_err() {
            return;
        }
        if armed {
            // Only the event can arrive while armed; anything else stops the run.
            match read_frame(&mut io.0).await {
                Ok(f) if is_notification(&f) => progress.add(&progress.notified),
                _ => return,
            }
        }
        loop {
            let Ok(f) = read_frame(&mut io.0).await else { return };
            if !is_notification(&f) {
                break;
            }
        }
        progress.add(&progress.armed);
    }
}

/// Whether a frame is a watch notification (xid -1), not a reply.
fn is_notification(frame: &[u8]) -> bool {
    frame.get(..4) == Some(&[0xff; 4])
}

/// addWatch's mode for a persistent, non-recursive watch (`AddWatchMode.PERSISTENT`).
const ADD_WATCH_PERSISTENT: i32 = 0;

/// A fan-out watcher on a persistent watch, already registered: each round is one event and
/// nothing to send. It returns as [`one_shot_watcher`] does.
async fn persistent_watcher(mut io: Io, progress: &FanProgress) {
    progress.add(&progress.armed);
    loop {
        match read_frame(&mut io.0).await {
            Ok(f) if is_notification(&f) => {}
            _ => return,
        }
        progress.add(&progress.notified);
        // Still armed: the next round may begin at once.
        progress.add(&progress.armed);
    }
}

async fn setup(a: &BenchArgs, hosts: &str) -> Result<(), CliError> {
    let mut io = connect(hosts).await?;
    call(&mut io, &create("/bench".into(), vec![], 0)).await?;
    match a.workload {
        Workload::Set | Workload::Get | Workload::Mixed => {
            for k in 0..a.keys {
                call(&mut io, &create(format!("/bench/k{k}"), vec![b'x'; a.data_bytes], 0)).await?;
            }
        }
        Workload::Populate => {
            for p in 0..1000.min(a.znodes.max(1)) {
                call(&mut io, &create(format!("/bench/p{p}"), vec![], 0)).await?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Runs `rzk bench`.
pub(crate) async fn run(connect_args: &Connect, a: BenchArgs) -> Result<(), CliError> {
    let hosts = connect_args.hosts.clone();
    let duration = Duration::from_secs_f64(a.duration_s);
    let strategy_name = format!("{:?}", a.strategy).to_lowercase();
    match a.workload {
        Workload::Handoff => {
            let strategy = match a.strategy {
                Strategy::Predecessor => rzk_election::WatchStrategy::Predecessor,
                Strategy::Herd => rzk_election::WatchStrategy::Herd,
            };
            let sessions = a.participant_sessions.unwrap_or(a.participants);
            let r = crate::bench_election::handoff(
                &hosts,
                a.participants,
                sessions,
                strategy,
                duration,
                Duration::from_millis(a.gap_ms),
            )
            .await?;
            r.print("handoff", a.participants, &strategy_name, a.json);
            return Ok(());
        }
        Workload::Selector => {
            let r = crate::bench_election::selector(&hosts, a.participants, duration).await?;
            r.print("selector", a.participants, "predecessor", a.json);
            return Ok(());
        }
        Workload::Failover => {
            let r = crate::bench_election::failover(&hosts, a.session_timeout_ms, a.trials).await?;
            r.print("failover", 2, "predecessor", a.json);
            return Ok(());
        }
        _ => {}
    }
    let handoff = matches!(a.workload, Workload::HandoffEvent | Workload::HandoffRead);
    if handoff && a.participants < 2 {
        return Err(CliError::usage(
            "bench: handoff-event and handoff-read need --participants 2 or more: a handoff \
             needs a successor",
        ));
    }
    setup(&a, &hosts).await?;
    let a = Arc::new(a);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(a.duration_s);
    let stats = if handoff {
        let list = a.workload == Workload::HandoffRead;
        vec![crate::bench_handoff::handoff_event(&a, &hosts, list, deadline).await?]
    } else if matches!(a.workload, Workload::Fanout | Workload::FanoutPersistent) {
        // On a worker, not in `block_on`: the last watcher's wake-up then finds the setter on
        // its own thread's queue instead of waking the main thread, twice a round.
        let (a, hosts) = (a.clone(), hosts.clone());
        vec![tokio::spawn(async move { fanout(&a, &hosts, deadline).await })
            .await
            .map_err(err)??]
    } else {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        let n = a.sessions.max(1);
        for id in 0..n {
            let io = connect(&hosts).await?;
            let quota = (a.workload == Workload::Populate).then(|| {
                let share = a.znodes / n + usize::from(id < a.znodes % n);
                let first = id * (a.znodes / n) + id.min(a.znodes % n);
                (first, share)
            });
            tasks.push(tokio::spawn(session_loop(io, a.clone(), id, stop.clone(), quota)));
        }
        if a.workload != Workload::Populate {
            tokio::time::sleep_until(deadline.into()).await;
            stop.store(true, Ordering::Relaxed);
        }
        let mut all = Vec::new();
        for t in tasks {
            all.push(t.await.map_err(err)??);
        }
        all
    };
    let seconds = started.elapsed().as_secs_f64();
    let mut lat: Vec<u32> = stats.iter().flat_map(|s| s.latencies_us.iter().copied()).collect();
    let errors: u64 = stats.iter().map(|s| s.errors).sum();
    lat.sort_unstable();
    let ops = lat.len();
    let (p50, p99, p999) = (percentile(&lat, 0.5), percentile(&lat, 0.99), percentile(&lat, 0.999));
    let name = a.workload.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default();
    if a.json {
        println!(
            "{{\"workload\":\"{name}\",\"ops\":{ops},\"seconds\":{seconds:.3},\"ops_per_s\":{:.1},\"p50_us\":{p50},\"p99_us\":{p99},\"p999_us\":{p999},\"errors\":{errors}}}",
            ops as f64 / seconds
        );
    } else {
        println!(
            "{name}: {ops} ops in {seconds:.2}s = {:.0} ops/s; latency p50 {p50} us, p99 {p99} us, p999 {p999} us; {errors} errors",
            ops as f64 / seconds
        );
    }
    Ok(())
}
