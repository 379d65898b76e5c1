//! The race election at the protocol level (handoff-event with `--strategy race`), on any
//! server and with no election library: every candidate creates one EPHEMERAL node at a fixed
//! path; the one whose create succeeds leads, the others watch the node with `exists` and race
//! again when it is deleted. Every follower is notified of every handoff (the herd), against
//! one with predecessor watching.
//!
//! As in handoff-event, participants run on threads of their own with blocking reads, so that
//! the measurement is the server's. A handoff runs from the leader's delete to the reply of the
//! winner's create; before each delete, every follower has its watch armed again, so that each
//! handoff meets the whole herd (the re-arming after a handoff is not part of its latency, but
//! bounds the handoffs per second).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rzk_proto::{xid, EventType, PathWatch, Request};
use tokio::sync::mpsc as notes;

use crate::config::{BenchConfig, Strategy, Workload};
use crate::conn::{call, connect, create};
use crate::error::BenchError;
use crate::report::ElectionReport;
use rzk_wirekit::raw::{BlockingClient, RawError, Reply};

/// How often a leader waiting for orders pings, and a follower waiting for an event: well
/// inside the smallest session timeout a server grants by default (two ticks of 2 s).
const PING_INTERVAL: Duration = Duration::from_secs(1);

/// How long the coordinator waits for the next leader, or for the followers to watch again:
/// a server that drops a watch or stops answering stops the run instead of hanging it.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the coordinator looks whether every follower watches again (between handoffs,
/// not inside one).
const ARMED_POLL: Duration = Duration::from_millis(1);

/// ZooKeeper's `NodeExists`: another candidate won the race.
const NODE_EXISTS: i32 = -110;
/// ZooKeeper's `NoNode`: on `exists`, the node is gone (and a watch for its creation is set).
const NO_NODE: i32 = -101;

/// What the coordinator tells the leader.
enum Order {
    /// Delete the node (the next race's start).
    Resign,
    /// Watch the node again as a follower: the next leader has been found.
    Rejoin,
}

/// What participants tell the coordinator.
enum Note {
    /// Participant `who` won a race; when its create's reply arrived.
    Leads(usize, Instant),
    /// The leader is about to write its delete.
    Deleting(Instant),
    /// A participant stopped on this error.
    Failed(String),
}

/// What every participant shares with the coordinator.
struct Counters {
    /// Exists watches set on a leader's node, ever: each handoff sets one per follower
    /// (monotonic, so that a follower yet to read its deletion cannot be taken for one
    /// watching again).
    arms: AtomicU64,
    /// Watch notifications received by all participants.
    notifications: AtomicU64,
}

/// One participant: its session, its line to the coordinator and its orders.
struct Candidate {
    who: usize,
    client: BlockingClient,
    path: String,
    counters: Arc<Counters>,
    notes: notes::UnboundedSender<Note>,
    orders: mpsc::Receiver<Order>,
}

impl Candidate {
    /// Sends `req` and returns its reply, counting the notifications that arrive first.
    fn call(&mut self, req: &Request) -> Result<Reply, RawError> {
        self.client.send(req, 1)?;
        loop {
            let reply = self.client.read_reply()?;
            match reply.header.xid {
                xid::NOTIFICATION => self.count(),
                xid::PING => {}
                _ => return Ok(reply),
            }
        }
    }

    fn count(&self) {
        self.counters.notifications.fetch_add(1, Ordering::Relaxed);
    }

    /// Races until this participant wins: create; on `NodeExists`, watch the node with
    /// `exists` and race again once it is deleted (or, if it is already gone, at once).
    fn race(&mut self) -> Result<Instant, BenchError> {
        let node = create(self.path.clone(), vec![], 1); // ephemeral
        let exists = Request::Exists(PathWatch { path: self.path.clone(), watch: true });
        loop {
            let reply = self.call(&node)?;
            match reply.header.err {
                0 => return Ok(Instant::now()),
                NODE_EXISTS => {}
                code => return Err(BenchError::stopped(format!("create: error {code}"))),
            }
            match self.call(&exists)?.header.err {
                // Gone already: the watch now waits for a creation, which the next create
                // (ours or another's) fires; it is counted wherever it arrives.
                NO_NODE => continue,
                0 => {}
                code => return Err(BenchError::stopped(format!("exists: error {code}"))),
            }
            self.counters.arms.fetch_add(1, Ordering::Relaxed);
            loop {
                let e = self.client.read_notification()?;
                self.count();
                match e.event_type {
                    EventType::NodeDeleted => break,
                    // A creation watch set by an exists that found no node, firing late:
                    // the deletion watch set after it is still to come.
                    EventType::NodeCreated => {}
                    other => {
                        return Err(BenchError::stopped(format!("unexpected event {other:?}")))
                    }
                }
            }
        }
    }

    /// The next order, pinging while none comes; `None` once the coordinator hangs up.
    fn order(&mut self) -> Result<Option<Order>, BenchError> {
        loop {
            match self.orders.recv_timeout(PING_INTERVAL) {
                Ok(order) => return Ok(Some(order)),
                Err(mpsc::RecvTimeoutError::Timeout) => self.client.send_ping()?,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(None),
            }
        }
    }

    /// Leads when it wins; on `Resign`, deletes the node, and on `Rejoin` races again.
    fn lead_and_resign(&mut self) -> Result<(), BenchError> {
        loop {
            let at = self.race()?;
            let _ = self.notes.send(Note::Leads(self.who, at));
            let Some(Order::Resign) = self.order()? else { return Ok(()) };
            let _ = self.notes.send(Note::Deleting(Instant::now()));
            let delete = Request::Delete { path: self.path.clone(), version: -1 };
            match self.call(&delete)?.header.err {
                0 => {}
                code => return Err(BenchError::stopped(format!("delete: error {code}"))),
            }
            // Race again only once the next leader is known: our own writes do not race the
            // handoff being measured.
            let Some(Order::Rejoin) = self.order()? else { return Ok(()) };
        }
    }

    fn serve(mut self) {
        if let Err(e) = self.lead_and_resign() {
            let _ = self.notes.send(Note::Failed(e.to_string()));
        }
    }
}

/// The coordinator's side of the run.
struct Coordinator {
    orders: Vec<mpsc::Sender<Order>>,
    notes: notes::UnboundedReceiver<Note>,
    counters: Arc<Counters>,
}

impl Coordinator {
    async fn note(&mut self, what: &str) -> Result<Note, BenchError> {
        match tokio::time::timeout(ANSWER_TIMEOUT, self.notes.recv()).await {
            Ok(Some(Note::Failed(e))) => Err(BenchError::stopped(format!("a participant: {e}"))),
            Ok(Some(note)) => Ok(note),
            Ok(None) => Err(BenchError::stopped("every participant stopped")),
            Err(_) => {
                let s = ANSWER_TIMEOUT.as_secs();
                Err(BenchError::stopped(format!("{what}: nothing within {s} s")))
            }
        }
    }

    async fn leader(&mut self) -> Result<(usize, Instant), BenchError> {
        match self.note("the next leader").await? {
            Note::Leads(who, at) => Ok((who, at)),
            _ => Err(BenchError::stopped("two leaders resigned at once")),
        }
    }

    fn order(&self, who: usize, order: Order) -> Result<(), BenchError> {
        self.orders[who].send(order).map_err(|_| BenchError::stopped("a participant stopped"))
    }

    /// Waits until `arms` watches have been set in all: every follower watches again.
    async fn armed(&self, arms: u64) -> Result<(), BenchError> {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        while self.counters.arms.load(Ordering::Relaxed) < arms {
            if Instant::now() > deadline {
                let s = ANSWER_TIMEOUT.as_secs();
                return Err(BenchError::stopped(format!("followers not watching within {s} s")));
            }
            tokio::time::sleep(ARMED_POLL).await;
        }
        Ok(())
    }
}

/// Hands off until the duration is over: the leader deletes the node, everyone else races;
/// one latency per handoff, from the delete to the winner's create reply, and the watch
/// notifications all participants received per handoff.
pub(crate) async fn run(cfg: &BenchConfig, hosts: &str) -> Result<ElectionReport, BenchError> {
    let n = cfg.participants;
    let parent = format!("/bench/race-{}", std::process::id());
    let mut c = connect(hosts).await?;
    call(&mut c, &create("/bench".into(), vec![], 0)).await?;
    call(&mut c, &create(parent.clone(), vec![], 0)).await?;
    let counters = Arc::new(Counters { arms: 0.into(), notifications: 0.into() });
    let (notes_tx, notes_rx) = notes::unbounded_channel();
    let mut orders = Vec::with_capacity(n);
    for who in 0..n {
        let (tx, rx) = mpsc::channel();
        let mut client = connect(hosts).await?.into_blocking()?;
        client.keep_alive(Some(PING_INTERVAL))?;
        let candidate = Candidate {
            who,
            client,
            path: format!("{parent}/leader"),
            counters: counters.clone(),
            notes: notes_tx.clone(),
            orders: rx,
        };
        std::thread::Builder::new()
            .name(format!("candidate-{who}"))
            .spawn(move || candidate.serve())?;
        orders.push(tx);
    }
    drop(notes_tx);
    let mut co = Coordinator { orders, notes: notes_rx, counters };
    let (mut leader, _) = co.leader().await?;
    let followers = n as u64 - 1;
    let mut handoffs = 1;
    co.armed(followers).await?;
    let baseline = co.counters.notifications.load(Ordering::Relaxed);
    let mut samples = Vec::new();
    let started = Instant::now();
    while started.elapsed() < cfg.duration {
        if !cfg.gap.is_zero() {
            tokio::time::sleep(cfg.gap).await;
        }
        co.order(leader, Order::Resign)?;
        let Note::Deleting(t0) = co.note("the delete").await? else {
            return Err(BenchError::stopped("a leader before the delete"));
        };
        let (next, at) = co.leader().await?;
        samples.push(at.saturating_duration_since(t0).as_micros() as u64);
        co.order(leader, Order::Rejoin)?;
        leader = next;
        handoffs += 1;
        co.armed(handoffs * followers).await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let notifications = co.counters.notifications.load(Ordering::Relaxed) - baseline;
    let rounds = samples.len();
    // Dropping the senders ends the leader; the followers end with the process.
    Ok(ElectionReport {
        workload: Workload::HandoffEvent,
        participants: n,
        strategy: Strategy::Race.name(),
        rounds,
        seconds,
        samples_us: samples,
        notifications_per_change: notifications as f64 / rounds.max(1) as f64,
        errors: 0,
    })
}
