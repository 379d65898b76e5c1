//! The pipelined workloads: create, set, get, mixed, churn and populate. Each session keeps
//! `in_flight` requests outstanding and times each from its write to its reply.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rzk_proto::{PathWatch, Request};

use crate::config::{BenchConfig, Workload};
use crate::conn::{call, connect_over, create};
use crate::error::BenchError;
use rzk_wirekit::raw::AsyncClient;
use rzk_wirekit::stats::Samples;

/// Parents the populate workload spreads its znodes over.
const POPULATE_PARENTS: usize = 1000;

/// Creates `/bench`, under which every load workload works, and what the pipelined workloads
/// read or write there (set-up, not measured).
pub(crate) async fn setup(cfg: &BenchConfig, hosts: &str) -> Result<(), BenchError> {
    let mut c = connect_over(hosts, cfg.tls.as_ref()).await?;
    call(&mut c, &create("/bench".into(), vec![], 0)).await?;
    match cfg.workload {
        Workload::Set | Workload::Get | Workload::Mixed => {
            for k in 0..cfg.keys {
                call(&mut c, &create(format!("/bench/k{k}"), vec![b'x'; cfg.data_bytes], 0))
                    .await?;
            }
        }
        Workload::Populate => {
            for p in 0..POPULATE_PARENTS.min(cfg.znodes.max(1)) {
                call(&mut c, &create(format!("/bench/p{p}"), vec![], 0)).await?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Runs `cfg.sessions` pipelined sessions until `deadline` (populate: until its znodes are
/// created); what each measured.
pub(crate) async fn run(
    cfg: &Arc<BenchConfig>,
    hosts: &str,
    deadline: Instant,
) -> Result<Vec<Samples>, BenchError> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    let n = cfg.sessions.max(1);
    for id in 0..n {
        let client = connect_over(hosts, cfg.tls.as_ref()).await?;
        // Populate splits its znodes over the sessions: (first index, count).
        let quota = (cfg.workload == Workload::Populate).then(|| {
            let share = cfg.znodes / n + usize::from(id < cfg.znodes % n);
            let first = id * (cfg.znodes / n) + id.min(cfg.znodes % n);
            (first, share)
        });
        tasks.push(tokio::spawn(session(client, cfg.clone(), id, stop.clone(), quota)));
    }
    if cfg.workload != Workload::Populate {
        tokio::time::sleep_until(deadline.into()).await;
        stop.store(true, Ordering::Relaxed);
    }
    let mut all = Vec::new();
    for t in tasks {
        all.push(t.await??);
    }
    Ok(all)
}

/// A xorshift generator: cheap, and the same keys for the same session on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// An outstanding request.
enum Pending {
    Op(Instant),
    /// Churn: the create half; the delete follows.
    ChurnCreate(Instant, String),
}

/// What one session of a workload sends next.
struct Requests {
    cfg: Arc<BenchConfig>,
    id: usize,
    rng: Rng,
    data: Vec<u8>,
}

impl Requests {
    fn new(cfg: Arc<BenchConfig>, id: usize) -> Requests {
        let rng = Rng(0x9e37_79b9 ^ ((id as u64 + 1) * 0x2545_f491));
        let data = vec![b'x'; cfg.data_bytes];
        Requests { cfg, id, rng, data }
    }

    fn set(&mut self) -> Request {
        let path = format!("/bench/k{}", self.rng.below(self.cfg.keys));
        Request::SetData { path, data: Some(self.data.clone()), version: -1 }
    }

    fn get(&mut self) -> Request {
        let path = format!("/bench/k{}", self.rng.below(self.cfg.keys));
        Request::GetData(PathWatch { path, watch: false })
    }

    /// The `n`th request of this session (populate: the `n`th znode overall).
    fn next(&mut self, n: usize) -> (Request, Pending) {
        let now = Instant::now();
        let req = match self.cfg.workload {
            Workload::Create => create("/bench/c-".into(), self.data.clone(), 2),
            Workload::Set => self.set(),
            Workload::Get => self.get(),
            Workload::Mixed if self.rng.below(10) == 0 => self.set(),
            Workload::Mixed => self.get(),
            Workload::Churn => {
                let p = format!("/bench/e{}-{n}", self.id);
                return (create(p.clone(), self.data.clone(), 1), Pending::ChurnCreate(now, p));
            }
            Workload::Populate => {
                let parent = n % POPULATE_PARENTS;
                create(format!("/bench/p{parent}/n{n}"), vec![7; 16], 0)
            }
            Workload::Fanout
            | Workload::FanoutPersistent
            | Workload::Handoff
            | Workload::HandoffEvent
            | Workload::HandoffRead
            | Workload::Selector
            | Workload::Failover
            | Workload::MutexHandoff
            | Workload::MutexUncontended
            | Workload::Semaphore
            | Workload::QueuePairs
            | Workload::CounterAdd
            | Workload::ConfigPropagation
            | Workload::DiscoveryExpiry
            | Workload::SessionFailover
            | Workload::Sessions => unreachable!("these have their own loops"),
        };
        (req, Pending::Op(now))
    }
}

/// One pipelined session running its workload until `stop` (or until `quota` ops are done).
async fn session(
    mut client: AsyncClient,
    cfg: Arc<BenchConfig>,
    id: usize,
    stop: Arc<AtomicBool>,
    quota: Option<(usize, usize)>,
) -> Result<Samples, BenchError> {
    let mut samples = Samples::default();
    let in_flight = cfg.in_flight;
    let mut requests = Requests::new(cfg, id);
    let mut window: VecDeque<Pending> = VecDeque::with_capacity(in_flight * 2);
    let mut out = Vec::with_capacity(64 * 1024);
    let mut xid = 0i32;
    let mut issued = 0usize;
    let (first, count) = quota.unwrap_or((0, usize::MAX));
    loop {
        let stopping = stop.load(Ordering::Relaxed) || issued >= count;
        while !stopping && window.len() < in_flight && issued < count {
            xid = xid.wrapping_add(1).max(1);
            let (req, pending) = requests.next(first + issued);
            out.extend_from_slice(&req.to_frame(xid));
            window.push_back(pending);
            issued += 1;
        }
        // Replies already read count first: one write for the requests they make room for,
        // instead of one per reply (the load generator shares the server's cores).
        if !out.is_empty() && !client.has_buffered_frame() {
            client.write_raw(&out).await?;
            out.clear();
        }
        if window.is_empty() {
            break;
        }
        let reply = client.read_reply().await?;
        if reply.is_notification() {
            continue;
        }
        if reply.header.err != 0 {
            samples.errors += 1;
        }
        match window.pop_front().expect("not empty") {
            Pending::Op(t0) => samples.push(t0.elapsed()),
            Pending::ChurnCreate(t0, path) => {
                xid = xid.wrapping_add(1).max(1);
                out.extend_from_slice(&Request::Delete { path, version: -1 }.to_frame(xid));
                window.push_back(Pending::Op(t0));
            }
        }
    }
    Ok(samples)
}
