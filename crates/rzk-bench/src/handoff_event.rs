//! The protocol-level election handoff (handoff-event, handoff-read), on any server and with
//! no election library on either side: from the leader's delete to its successor's event.
//! Participants run on threads of their own with blocking reads, so that the successor is
//! woken by its event directly, not through an async runtime's reactor, and the measurement
//! is the server's.
//!
//! handoff-read goes one step further: the successor lists the election's children on its
//! event, as a recipe that checks before it claims must (Curator's LeaderLatch does, and so
//! does rzk-recipes), and the handoff ends with that list's reply. No LeaderLatch on any
//! server can hand off faster than this workload does on it.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rzk_proto::jute::Reader;
use rzk_proto::{EventType, PathWatch, Request};
use tokio::sync::oneshot;

use crate::config::BenchConfig;
use crate::conn::{call, connect, create};
use crate::error::BenchError;
use rzk_wirekit::raw::{BlockingClient, RawError, Reply};
use rzk_wirekit::stats::Samples;

/// How often a waiting participant pings: well inside the smallest session timeout a server
/// grants by default (two ticks; ZooKeeper's and rzk's tick is 2 s).
const PARTICIPANT_PING_INTERVAL: Duration = Duration::from_secs(1);

/// How long the coordinator waits for a participant's answer: a server that stops answering
/// or drops a watch stops the run instead of hanging it.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// What the coordinator asks of a participant, which owns its session.
enum Order {
    /// Create our node at the tail of the queue; answer with its path.
    Join(oneshot::Sender<Result<String, BenchError>>),
    /// Watch the predecessor's node; answer once the watch is set, then report when the
    /// node's deletion arrives (with `list`, when the election's children, read on that
    /// event, arrive).
    Watch {
        predecessor: String,
        armed: oneshot::Sender<Result<(), BenchError>>,
        event: oneshot::Sender<Result<Instant, BenchError>>,
    },
    /// Delete our node; report the instant just before the request is written, then the reply.
    Delete {
        path: String,
        sent: oneshot::Sender<Instant>,
        done: oneshot::Sender<Result<(), BenchError>>,
    },
}

/// One request that must succeed; its reply.
fn ok(c: &mut BlockingClient, req: &Request, what: &str) -> Result<Reply, BenchError> {
    let reply = c.call(req, 1)?;
    match reply.header.err {
        0 => Ok(reply),
        code => Err(BenchError::stopped(format!("{what}: error {code}"))),
    }
}

/// Waits for `path`'s deletion (pinging while nothing arrives); the instant it arrived.
fn deletion(c: &mut BlockingClient, path: &str) -> Result<Instant, BenchError> {
    let e = c.read_notification()?;
    let at = Instant::now();
    if e.event_type != EventType::NodeDeleted || e.path != path {
        return Err(BenchError::stopped(format!("expected {path}'s deletion, got {e:?}")));
    }
    Ok(at)
}

/// Lists `parent`'s children, as a recipe does on its predecessor's deletion; the instant the
/// list arrived, or an error if `own` is not first in it (every node here has the same
/// prefix, so the lowest sequence number sorts first).
fn first_in_list(c: &mut BlockingClient, parent: &str, own: &str) -> Result<Instant, BenchError> {
    let req = Request::GetChildren(PathWatch { path: parent.into(), watch: false });
    let reply = ok(c, &req, "getChildren")?;
    let at = Instant::now();
    let children = Reader::new(reply.body()).read_string_vec().map_err(RawError::from)?;
    match children.iter().min() {
        Some(first) if first == own => Ok(at),
        _ => Err(BenchError::stopped(format!(
            "{own} is not first after its predecessor's deletion: {children:?}"
        ))),
    }
}

/// A participant's session and what it knows of its place in the election.
struct Participant {
    client: BlockingClient,
    parent: String,
    /// handoff-read: list the children on the predecessor's deletion.
    list: bool,
    /// Our node's name once joined: handoff-read checks it is first in the list it reads.
    own: String,
}

impl Participant {
    /// Carries out one order; whether it failed (the coordinator has been told).
    fn obey(&mut self, order: Order) -> bool {
        match order {
            Order::Join(reply) => {
                let node = create(format!("{}/n-", self.parent), vec![], 3); // ephemeral, sequential
                let r = ok(&mut self.client, &node, "create").and_then(|reply| {
                    let path = Reader::new(reply.body()).read_string();
                    path.map_err(|e| RawError::from(e).into())
                });
                if let Ok(path) = &r {
                    self.own = path.rsplit('/').next().unwrap_or_default().to_owned();
                }
                let failed = r.is_err();
                let _ = reply.send(r);
                failed
            }
            Order::Watch { predecessor, armed, event } => {
                let exists = Request::Exists(PathWatch { path: predecessor.clone(), watch: true });
                if let Err(e) = ok(&mut self.client, &exists, "exists") {
                    let _ = armed.send(Err(e));
                    return true;
                }
                let _ = armed.send(Ok(()));
                let mut r = deletion(&mut self.client, &predecessor);
                if self.list && r.is_ok() {
                    r = first_in_list(&mut self.client, &self.parent, &self.own);
                }
                let failed = r.is_err();
                let _ = event.send(r);
                failed
            }
            Order::Delete { path, sent, done } => {
                let _ = sent.send(Instant::now());
                let delete = Request::Delete { path, version: -1 };
                let r = ok(&mut self.client, &delete, "delete").map(drop);
                let failed = r.is_err();
                let _ = done.send(r);
                failed
            }
        }
    }

    /// Carries out orders until one fails or the coordinator hangs up.
    fn serve(mut self, orders: &mpsc::Receiver<Order>) {
        loop {
            let order = match orders.recv_timeout(PARTICIPANT_PING_INTERVAL) {
                Ok(order) => order,
                // A leader between handoffs (a gap) keeps its session too; the reply is
                // skipped by the next call.
                Err(mpsc::RecvTimeoutError::Timeout) => match self.client.send_ping() {
                    Ok(()) => continue,
                    Err(_) => return,
                },
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            };
            if self.obey(order) {
                return;
            }
        }
    }
}

/// Waits for a participant's answer, at most [`ANSWER_TIMEOUT`].
async fn answer<T>(
    rx: oneshot::Receiver<Result<T, BenchError>>,
    what: &str,
) -> Result<T, BenchError> {
    match tokio::time::timeout(ANSWER_TIMEOUT, rx).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => Err(BenchError::stopped(format!("{what}: the participant stopped"))),
        Err(_) => {
            let s = ANSWER_TIMEOUT.as_secs();
            Err(BenchError::stopped(format!("{what}: no answer within {s} s")))
        }
    }
}

/// The coordinator's line to each participant's thread.
struct Participants(Vec<mpsc::Sender<Order>>);

impl Participants {
    /// Starts `n` participants of the election under `parent`, each on its own session and
    /// thread.
    async fn start(hosts: &str, parent: &str, n: usize, list: bool) -> Result<Self, BenchError> {
        let mut orders = Vec::with_capacity(n);
        for i in 0..n {
            let (tx, rx) = mpsc::channel();
            let mut client = connect(hosts).await?.into_blocking()?;
            client.keep_alive(Some(PARTICIPANT_PING_INTERVAL))?;
            let p = Participant { client, parent: parent.to_owned(), list, own: String::new() };
            std::thread::Builder::new()
                .name(format!("participant-{i}"))
                .spawn(move || p.serve(&rx))?;
            orders.push(tx);
        }
        Ok(Participants(orders))
    }

    fn send(&self, who: usize, order: Order) -> Result<(), BenchError> {
        self.0[who].send(order).map_err(|_| BenchError::stopped("a participant stopped"))
    }

    /// Joins `who` at the tail behind `predecessor` (if any); its node and the receiver of
    /// the predecessor's deletion.
    async fn join(
        &self,
        who: usize,
        predecessor: Option<String>,
    ) -> Result<(String, Option<oneshot::Receiver<Result<Instant, BenchError>>>), BenchError> {
        let (tx, rx) = oneshot::channel();
        self.send(who, Order::Join(tx))?;
        let node = answer(rx, "join").await?;
        let Some(predecessor) = predecessor else { return Ok((node, None)) };
        let (armed, armed_rx) = oneshot::channel();
        let (event, event_rx) = oneshot::channel();
        self.send(who, Order::Watch { predecessor, armed, event })?;
        answer(armed_rx, "watch").await?;
        Ok((node, Some(event_rx)))
    }
}

/// Hands off until `deadline`: the leader deletes its node and rejoins at the tail; one
/// latency per handoff, to the successor's event (with `list`, to its list's reply).
pub(crate) async fn run(
    cfg: &BenchConfig,
    hosts: &str,
    list: bool,
    deadline: Instant,
) -> Result<Samples, BenchError> {
    let parent = format!("/bench/handoff-{}", std::process::id());
    let mut c = connect(hosts).await?;
    call(&mut c, &create(parent.clone(), vec![], 0)).await?;
    let n = cfg.participants;
    let ps = Participants::start(hosts, &parent, n, list).await?;
    // The queue, leader first: (participant, its node, the receiver of its predecessor's
    // deletion).
    let mut queue: VecDeque<(usize, String, Option<_>)> = VecDeque::with_capacity(n);
    for who in 0..n {
        let (node, event) = ps.join(who, queue.back().map(|q| q.1.clone())).await?;
        queue.push_back((who, node, event));
    }
    let mut samples = Samples::default();
    let what = if list { "the successor's list" } else { "the successor's event" };
    while Instant::now() < deadline {
        if !cfg.gap.is_zero() {
            tokio::time::sleep(cfg.gap).await;
        }
        let (leader, node, _) = queue.pop_front().expect("n >= 2");
        let event = queue.front_mut().and_then(|q| q.2.take()).expect("the successor watches");
        let (sent, sent_rx) = oneshot::channel();
        let (done, done_rx) = oneshot::channel();
        ps.send(leader, Order::Delete { path: node, sent, done })?;
        let t0 =
            sent_rx.await.map_err(|_| BenchError::stopped("delete: the participant stopped"))?;
        let at = answer(event, what).await?;
        samples.push(at.saturating_duration_since(t0));
        answer(done_rx, "delete").await?;
        // Rejoin at the tail only now, as the election workloads do: the rejoin's writes do
        // not race the handoff being measured.
        let (node, event) = ps.join(leader, queue.back().map(|q| q.1.clone())).await?;
        queue.push_back((leader, node, event));
    }
    // Dropping the senders ends the participants waiting for orders; those waiting for an
    // event end with the process, and their sessions with their sockets.
    Ok(samples)
}
