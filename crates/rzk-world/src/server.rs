//! The world's server: one [`Machine`] behind a lock, its connections, and the work a real
//! server's shell does around the core (the timer, group commit, snapshots, power loss), as
//! tasks on the world's virtual clock.
//!
//! Invariant: the lock is never held across an `.await`, so every step of the machine is
//! atomic with respect to the world's other tasks, as it is behind the real server's pump.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rzk_core::{Config, ConnId, Now, Output};
use rzk_sim::{Machine, Rng};
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;

/// Frames queued for one connection before the server drops it as too slow, as a real
/// server bounds a connection's output queue.
pub(crate) const OUTBOUND_FRAMES_MAX: usize = 4096;
/// The server's timer period: session expiry is checked this often.
const TICK_EVERY: Duration = Duration::from_millis(10);
/// The longest a group commit waits before it syncs, in microseconds.
const SYNC_DELAY_US_MAX: u64 = 3000;
/// Zxids whose moment of landing the server remembers, for the checks; later ones are not
/// recorded (a run of the default length writes a few thousand).
const LANDINGS_MAX: usize = 1 << 20;
/// The server's tickTime: sessions negotiate timeouts between 2 and 20 of these.
pub(crate) const TICK_MS: u32 = 100;
/// How often the server looks for empty containers to reap.
const CONTAINER_CHECK_MS: u64 = 500;
/// The chance that a group commit's step syncs (the rest write, or leave for the next step,
/// what a crash may tear), in percent.
const SYNC_PERCENT: u64 = 60;
/// The chance that a group commit's step starts a snapshot, in percent.
const SNAPSHOT_PERCENT: u64 = 1;
/// The core's monotonic clock at the world's start, in milliseconds (any positive value).
const MONO_MS_AT_START: u64 = 1_000;
/// The core's wall clock at the world's start, in milliseconds since the epoch.
const WALL_MS_AT_START: i64 = 1_700_000_000_000;
/// Mixed into the world's seed for the server's own random source.
const SERVER_SEED_SALT: u64 = 0x5e7e_5e7e;

/// Which connection's request applied a transaction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Landing {
    pub zxid: i64,
    /// When the connection that carried it was accepted; `None` for the timer's.
    pub conn_opened_ms: Option<u64>,
}

/// What a connection's link is doing; set by the faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Link {
    /// Gone: the pump stops without writing what is queued.
    pub cut: bool,
    /// Black-holed: nothing is read or written until it clears.
    pub hole: bool,
    /// Added before each frame the server writes, in milliseconds.
    pub delay_ms: u64,
}

struct Conn {
    process: usize,
    /// When it was accepted, in world milliseconds.
    opened_ms: u64,
    out: mpsc::Sender<Vec<u8>>,
    link: watch::Sender<Link>,
}

struct Inner {
    machine: Machine,
    rng: Rng,
    conns: BTreeMap<ConnId, Conn>,
    next_conn: ConnId,
    /// Set while the machine recovers from a crash: connections are refused.
    down: bool,
    /// Set while the whole server is stopped: nothing is read, written or expired.
    stalled: bool,
    /// Processes whose links are black-holed, new connections included.
    isolated: BTreeMap<usize, u64>,
    /// The first invariant the machine reported broken.
    failure: Option<String>,
    crashes: u64,
    /// When each step's last transaction was applied, in zxid order.
    landings: Vec<Landing>,
}

/// The server, shared by the world's tasks.
pub(crate) struct Server {
    inner: Mutex<Inner>,
    dirty: Notify,
    start: Instant,
    /// How fast the core's clock runs against the world's, in parts per thousand.
    clock_permille: i64,
}

/// A new connection's ends on the server's side.
pub(crate) struct Accepted {
    pub conn: ConnId,
    pub out: mpsc::Receiver<Vec<u8>>,
    pub link: watch::Receiver<Link>,
}

fn peer(process: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 10_000 + (process % 50_000) as u16))
}

impl Server {
    /// A server whose own choices (sync moments, torn writes) come from `seed`, and whose
    /// clock starts at `start`, the world's origin, and runs `clock_permille` parts per
    /// thousand faster than the world's (slower, if negative).
    pub fn new(seed: u64, start: Instant, clock_permille: i64) -> Arc<Server> {
        let mut config = Config::with_tick_ms(TICK_MS);
        config.seed = seed.into();
        config.container_check_interval_ms = CONTAINER_CHECK_MS;
        let now = Now { mono_ms: MONO_MS_AT_START, wall_ms: WALL_MS_AT_START };
        let inner = Inner {
            machine: Machine::new(config, now),
            rng: Rng::new(seed ^ SERVER_SEED_SALT),
            conns: BTreeMap::new(),
            next_conn: 1,
            down: false,
            stalled: false,
            isolated: BTreeMap::new(),
            failure: None,
            crashes: 0,
            landings: Vec::new(),
        };
        Arc::new(Server { inner: Mutex::new(inner), dirty: Notify::new(), start, clock_permille })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().expect("a world task panicked holding the server")
    }

    /// The core's clock: the world's, at the server's rate.
    pub fn now(&self) -> Now {
        let world = self.world_ms() as i64;
        let ms = (world + world * self.clock_permille / 1000).max(0);
        Now { mono_ms: MONO_MS_AT_START + ms as u64, wall_ms: WALL_MS_AT_START + ms }
    }

    /// Milliseconds of world time since the start: the recorder's clock.
    fn world_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// The first broken invariant the machine reported.
    pub fn failure(&self) -> Option<String> {
        self.lock().failure.clone()
    }

    /// Which connection applied the transaction `zxid`, if it was recorded.
    pub fn landing(&self, zxid: i64) -> Option<Landing> {
        let g = self.lock();
        let i = g.landings.partition_point(|l| l.zxid < zxid);
        g.landings.get(i).filter(|l| l.zxid == zxid).copied()
    }

    /// Records `what` as the world's failure (the first one reported stays).
    pub fn report(&self, what: String) {
        self.lock().fail(what);
    }

    /// The owner word of the node at `path` (an ephemeral's session), if the node exists.
    pub fn owner_of(&self, path: &str) -> Option<i64> {
        self.lock().machine.core().state().node(path).map(|n| n.meta.ephemeral_owner)
    }

    /// The ephemeral nodes session `session` owns under `prefix`.
    pub fn ephemerals_under(&self, session: i64, prefix: &str) -> Vec<String> {
        let g = self.lock();
        let state = g.machine.core().state();
        state.ephemerals_of(session).filter(|p| p.starts_with(prefix)).map(String::from).collect()
    }

    /// Every node at and below `path`, with its data.
    pub fn subtree(&self, path: &str) -> BTreeMap<String, Vec<u8>> {
        let g = self.lock();
        let state = g.machine.core().state();
        let mut out = BTreeMap::new();
        let mut todo = vec![path.to_string()];
        while let Some(p) = todo.pop() {
            let Some(node) = state.node(&p) else { continue };
            todo.extend(node.children.iter().map(|c| format!("{p}/{c}")));
            out.insert(p, node.data.as_deref().unwrap_or_default().to_vec());
        }
        out
    }

    /// The data of the node at `path`, if it exists.
    pub fn data_of(&self, path: &str) -> Option<Vec<u8>> {
        let g = self.lock();
        g.machine.core().state().node(path).map(|n| n.data.as_deref().unwrap_or_default().to_vec())
    }

    /// The data of each child of `path`, in name order (none if `path` does not exist).
    pub fn children_data(&self, path: &str) -> Vec<Vec<u8>> {
        self.children(path).into_values().map(|(_, data)| data).collect()
    }

    /// Each child of `path` by name, with its owner word (an ephemeral's session) and data.
    pub fn children(&self, path: &str) -> BTreeMap<String, (i64, Vec<u8>)> {
        let g = self.lock();
        let state = g.machine.core().state();
        let Some(parent) = state.node(path) else { return BTreeMap::new() };
        (parent.children.iter())
            .filter_map(|name| Some((name, state.node(&format!("{path}/{name}"))?)))
            .map(|(name, n)| {
                (
                    name.to_string(),
                    (n.meta.ephemeral_owner, n.data.as_deref().unwrap_or_default().to_vec()),
                )
            })
            .collect()
    }

    /// Crashes so far.
    pub fn crashes(&self) -> u64 {
        self.lock().crashes
    }

    /// Accepts a connection from `process`, or refuses it while the machine is down.
    ///
    /// # Errors
    /// `ConnectionRefused` while the machine recovers.
    pub fn open(&self, process: usize) -> io::Result<Accepted> {
        let mut g = self.lock();
        if g.down {
            return Err(io::Error::new(io::ErrorKind::ConnectionRefused, "server down"));
        }
        let conn = g.next_conn;
        g.next_conn += 1;
        let (out_tx, out) = mpsc::channel(OUTBOUND_FRAMES_MAX);
        let hole = g.stalled || g.isolated.contains_key(&process);
        let (link_tx, link) = watch::channel(Link { hole, ..Link::default() });
        let opened_ms = self.world_ms();
        g.conns.insert(conn, Conn { process, opened_ms, out: out_tx, link: link_tx });
        g.machine.core_mut().open(conn, peer(process));
        Ok(Accepted { conn, out, link })
    }

    /// One frame from a connection.
    pub fn receive(&self, conn: ConnId, frame: &[u8]) {
        let now = self.now();
        let mut g = self.lock();
        if !g.conns.contains_key(&conn) {
            return;
        }
        if g.machine.core_mut().receive(conn, frame, now).is_err() {
            g.drop_conn(conn);
        }
        g.landed(Some(conn));
        g.route();
        if g.machine.core().state().last_zxid() > g.machine.durable_zxid() {
            self.dirty.notify_one();
        }
    }

    /// The client's side of a connection is gone.
    pub fn closed(&self, conn: ConnId) {
        let mut g = self.lock();
        g.drop_conn(conn);
        g.route();
    }

    /// Sets the links of `process` (every process for `None`).
    pub fn set_links(&self, process: Option<usize>, f: impl Fn(&mut Link)) {
        let g = self.lock();
        for c in g.conns.values().filter(|c| process.is_none_or(|p| c.process == p)) {
            c.link.send_modify(&f);
        }
    }

    /// The faults stop: every black-hole and stall clears and every delay ends.
    pub fn calm(&self) {
        {
            let mut g = self.lock();
            g.isolated.clear();
            g.stalled = false;
        }
        self.set_links(None, |l| {
            l.hole = false;
            l.delay_ms = 0;
        });
    }

    /// Black-holes `process`, new connections included, until [`Server::rejoin`].
    pub fn isolate(&self, process: usize) {
        *self.lock().isolated.entry(process).or_default() += 1;
        self.set_links(Some(process), |l| l.hole = true);
    }

    /// Ends one isolation of `process`.
    pub fn rejoin(&self, process: usize) {
        let mut g = self.lock();
        let left = g.isolated.get_mut(&process).map(|n| {
            *n -= 1;
            *n
        });
        if left == Some(0) {
            g.isolated.remove(&process);
            for c in g.conns.values().filter(|c| c.process == process) {
                c.link.send_modify(|l| l.hole = false);
            }
        }
    }

    /// Power loss: every connection is cut and the machine recovers from its disk; it serves
    /// again `recovering` later. Returns false when a crash is already under way.
    pub async fn crash(self: &Arc<Self>, recovering: Duration) -> bool {
        {
            let now = self.now();
            let mut g = self.lock();
            if g.down {
                return false;
            }
            let Inner { machine, rng, .. } = &mut *g;
            if let Err(e) = machine.crash(rng, now) {
                g.fail(e);
            }
            // Zxids past the recovered state were never acknowledged and will be reused.
            let kept = g.machine.core().state().last_zxid();
            g.landings.retain(|l| l.zxid <= kept);
            for c in std::mem::take(&mut g.conns).into_values() {
                c.link.send_modify(|l| l.cut = true);
            }
            g.down = true;
            g.crashes += 1;
        }
        tokio::time::sleep(recovering).await;
        let now = self.now();
        let mut g = self.lock();
        if let Err(e) = g.machine.serve(now) {
            g.fail(e);
        }
        g.down = false;
        true
    }

    /// The whole server stops (a long GC pause, SIGSTOP) while its clock runs on: nothing is
    /// read, answered or expired until [`Server::resume`] or the calm. Returns false when a
    /// stall is already under way. Applied at once, not from a task, so that a stall drawn
    /// as the faults end is cleared by the calm that follows.
    pub fn stall(&self) -> bool {
        if std::mem::replace(&mut self.lock().stalled, true) {
            return false;
        }
        self.set_links(None, |l| l.hole = true);
        true
    }

    /// The server runs again after a stall. With `ticks_first`, the timer runs before any
    /// connection is read, as a session tracker that wakes first expires every session whose
    /// pings still wait unread; otherwise the connections and the timer race as after any
    /// pause.
    pub fn resume(&self, ticks_first: bool) {
        self.lock().stalled = false;
        if ticks_first {
            self.tick();
        }
        let g = self.lock();
        for c in g.conns.values().filter(|c| !g.isolated.contains_key(&c.process)) {
            c.link.send_modify(|l| l.hole = false);
        }
    }

    /// The timer: expires sessions, reaps containers.
    pub async fn run_timer(self: Arc<Self>) {
        loop {
            tokio::time::sleep(TICK_EVERY).await;
            self.tick();
        }
    }

    /// One step of the timer, unless the server is down or stalled.
    fn tick(&self) {
        let now = self.now();
        let mut g = self.lock();
        if g.down || g.stalled {
            return;
        }
        let step = g.machine.tick(now).and_then(|()| {
            rzk_sim::invariants::ephemerals_have_live_owners(g.machine.core().state())
        });
        if let Err(e) = step {
            g.fail(e);
        }
        g.landed(None);
        g.route();
        if g.machine.core().state().last_zxid() > g.machine.durable_zxid() {
            self.dirty.notify_one();
        }
    }

    /// Group commit and snapshots: a sync a random moment after writes arrive, torn writes
    /// in between, a fuzzy snapshot now and then.
    pub async fn run_disk(self: Arc<Self>) {
        loop {
            let pending = {
                let g = self.lock();
                g.machine.core().state().last_zxid() > g.machine.durable_zxid()
            };
            if !pending {
                self.dirty.notified().await;
            }
            let wait_us = self.lock().rng.below(SYNC_DELAY_US_MAX + 1);
            tokio::time::sleep(Duration::from_micros(wait_us)).await;
            let mut g = self.lock();
            if g.down {
                continue;
            }
            let Inner { machine, rng, .. } = &mut *g;
            let step = machine.persist(rng, SYNC_PERCENT).and_then(|_| {
                if rng.percent(SNAPSHOT_PERCENT) {
                    machine.start_snapshot()?;
                }
                machine.advance_snapshot(rng)
            });
            if let Err(e) = step {
                g.fail(e);
            }
            g.route();
        }
    }
}

impl Inner {
    /// Records which connection applied the last transaction (`None`: the timer did).
    fn landed(&mut self, conn: Option<ConnId>) {
        let zxid = self.machine.core().state().last_zxid();
        if self.landings.last().is_some_and(|l| l.zxid >= zxid) {
            return;
        }
        if self.landings.len() < LANDINGS_MAX {
            let conn_opened_ms = conn.and_then(|c| self.conns.get(&c)).map(|c| c.opened_ms);
            self.landings.push(Landing { zxid, conn_opened_ms });
        }
    }

    fn fail(&mut self, what: String) {
        self.failure.get_or_insert(what);
    }

    fn drop_conn(&mut self, conn: ConnId) {
        if self.conns.remove(&conn).is_some() {
            self.machine.core_mut().closed(conn);
        }
    }

    /// Hands the core's outputs to the connections' pumps.
    fn route(&mut self) {
        while let Some(out) = self.machine.core_mut().poll_output() {
            match out {
                Output::Send { conn, frame } => {
                    let full =
                        self.conns.get(&conn).is_some_and(|c| c.out.try_send(frame).is_err());
                    if full {
                        self.drop_conn(conn);
                    }
                }
                // The pump writes what is queued, then finds the channel closed.
                Output::Close { conn, .. } => self.drop_conn(conn),
            }
        }
    }
}
