//! The simulation loop: the shell's job, done deterministically.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rzk_core::state::SnapshotCursor;
use rzk_core::{Config, ConnId, Core, Now, Output, Txn};
use rzk_storage::{CrashMode, CrashStorage, LogEnd, LogWriter, SnapshotWriter};

use crate::client::{Observed, SimClient};
use crate::{invariants, Rng};

const DIR: &str = "/sim";
const SEGMENT_BYTES: u64 = 32 * 1024;
/// The longest a restart spends between recovering the state and accepting connections
/// (opening the log, binding), comparable to the clients' session timeouts.
const RECOVERY_TO_SERVING_MS_MAX: u64 = 400;

/// How often each fault happens, in percent per step.
#[derive(Debug, Clone, Copy)]
pub struct Faults {
    /// A client's connection drops.
    pub drop_connection: u64,
    /// A client stalls past its session timeout.
    pub stall: u64,
    /// The machine loses power and restarts from its disk.
    pub crash: u64,
    /// The log is synced (group commit) in a step.
    pub sync: u64,
    /// A snapshot starts (if none is running).
    pub snapshot: u64,
    /// A client closes its session.
    pub close_session: u64,
}

impl Faults {
    /// A hostile mix.
    pub fn default_mix() -> Faults {
        Faults { drop_connection: 2, stall: 1, crash: 1, sync: 60, snapshot: 2, close_session: 1 }
    }

    /// No faults: for the liveness phase.
    pub fn none() -> Faults {
        Faults { drop_connection: 0, stall: 0, crash: 0, sync: 100, snapshot: 0, close_session: 0 }
    }
}

/// Counts of what happened, to show a run exercised what it claims.
#[derive(Debug, Default, Clone)]
pub struct SimReport {
    /// Steps run.
    pub steps: u64,
    /// Transactions written.
    pub txns: u64,
    /// Writes acknowledged to clients.
    pub acks: u64,
    /// Crashes and recoveries.
    pub crashes: u64,
    /// Snapshots sealed.
    pub snapshots: u64,
    /// Sessions the clients saw expire.
    pub expirations: u64,
    /// Connections dropped by the fault injector.
    pub drops: u64,
    /// Watch events delivered.
    pub events: u64,
    /// Spare log segments written ahead of a roll.
    pub spares: u64,
}

struct Snapshotting {
    writer: SnapshotWriter,
    cursor: SnapshotCursor,
    end_zxid: Option<i64>,
}

/// A simulated server with its clients.
pub struct Sim {
    seed: u64,
    rng: Rng,
    now: Now,
    config: Config,
    storage: CrashStorage,
    log: LogWriter,
    core: Core,
    clients: Vec<SimClient>,
    next_conn: ConnId,
    history: Vec<Txn>,
    durable_zxid: i64,
    max_acked_zxid: i64,
    sequences: HashMap<String, i64>,
    snapshot: Option<Snapshotting>,
    faults: Faults,
    report: SimReport,
    /// For each session restored by the last recovery, the earliest moment it may expire: a
    /// full timeout after the server started serving again.
    restored_expiry_floor_ms: BTreeMap<i64, u64>,
}

fn peer() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 4000))
}

impl Sim {
    /// A fresh server with `clients` clients, all decided by `seed`.
    pub fn new(seed: u64, clients: usize, faults: Faults) -> Sim {
        let mut rng = Rng::new(seed);
        let now = Now { mono_ms: 1_000, wall_ms: 1_700_000_000_000 };
        let mut config = Config::with_tick_ms(100);
        config.seed = seed.into();
        config.container_check_interval_ms = 500;
        let storage = CrashStorage::new();
        let rec = rzk_storage::recover(&storage, Path::new(DIR), Path::new(DIR))
            .expect("empty disk recovers");
        let log =
            LogWriter::open(Arc::new(storage.clone()), Path::new(DIR), SEGMENT_BYTES, &rec.log_end)
                .expect("log opens");
        let mut core = Core::with_state(config.clone(), rec.state, now);
        core.start_serving(now);
        let clients =
            (0..clients).map(|i| SimClient::new(i, 300 + 100 * rng.below(10) as i32)).collect();
        Sim {
            seed,
            rng,
            now,
            config,
            storage,
            log,
            core,
            clients,
            next_conn: 1,
            history: Vec::new(),
            durable_zxid: 0,
            max_acked_zxid: 0,
            sequences: HashMap::new(),
            snapshot: None,
            faults,
            report: SimReport::default(),
            restored_expiry_floor_ms: BTreeMap::new(),
        }
    }

    /// What happened so far.
    pub fn report(&self) -> &SimReport {
        &self.report
    }

    fn fail(&self, step: u64, what: String) -> String {
        format!("simulation seed {} failed at step {step}: {what}", self.seed)
    }

    /// Runs `steps` steps with the configured faults.
    ///
    /// # Errors
    /// The first invariant violation, naming the seed and the step.
    pub fn run(&mut self, steps: u64) -> Result<(), String> {
        for _ in 0..steps {
            let step = self.report.steps;
            self.step(true).map_err(|e| self.fail(step, e))?;
            self.report.steps += 1;
        }
        Ok(())
    }

    /// The liveness phase: faults off, every client must reconnect and get every request
    /// answered within `steps` steps.
    ///
    /// # Errors
    /// A violation, or clients still waiting when the steps run out.
    pub fn heal(&mut self, steps: u64) -> Result<(), String> {
        self.faults = Faults::none();
        for c in &mut self.clients {
            c.stalled_until_ms = 0;
        }
        for i in 0..steps {
            let issue = i < steps / 2;
            let step = self.report.steps;
            self.step(issue).map_err(|e| self.fail(step, e))?;
            self.report.steps += 1;
            if !issue
                && self
                    .clients
                    .iter()
                    .all(|c| c.conn.is_some() && !c.connecting && c.pending.is_empty())
            {
                return Ok(());
            }
        }
        let stuck: Vec<String> = self
            .clients
            .iter()
            .filter(|c| c.conn.is_none() || c.connecting || !c.pending.is_empty())
            .map(|c| format!("client {} (conn {:?}, {} pending)", c.id, c.conn, c.pending.len()))
            .collect();
        Err(self.fail(self.report.steps, format!("no progress after healing: {stuck:?}")))
    }

    fn step(&mut self, issue: bool) -> Result<(), String> {
        self.now.mono_ms += self.rng.below(25);
        self.now.wall_ms += 7;
        self.tick()?;
        self.inject_faults()?;
        let n = self.clients.len();
        for _ in 0..(1 + self.rng.below(3)) {
            let i = self.rng.below(n as u64) as usize;
            self.drive_client(i, issue);
        }
        // Idle clients ping like real ones (a third of the timeout), unless stalled.
        for i in 0..n {
            let c = &self.clients[i];
            let idle =
                self.now.mono_ms.saturating_sub(c.last_sent_ms) > (c.negotiated_ms as u64) / 3;
            if c.conn.is_some() && !c.connecting && idle && c.stalled_until_ms <= self.now.mono_ms {
                let frame = self.clients[i].ping(self.now.mono_ms);
                self.send(i, &frame);
            }
        }
        self.persist()?;
        self.deliver()?;
        self.advance_snapshot()?;
        invariants::ephemerals_have_live_owners(self.core.state())
    }

    /// The timer's tick, checked against the restored sessions' floors.
    fn tick(&mut self) -> Result<(), String> {
        let now = self.now.mono_ms;
        self.restored_expiry_floor_ms.retain(|_, floor| *floor > now);
        let sessions = self.core.state().sessions();
        let protected: Vec<i64> = self
            .restored_expiry_floor_ms
            .keys()
            .copied()
            .filter(|id| sessions.contains_key(id))
            .collect();
        self.core.tick(self.now);
        invariants::restored_sessions_keep_their_timeout(&protected, self.core.state())
    }

    fn inject_faults(&mut self) -> Result<(), String> {
        let n = self.clients.len() as u64;
        if self.rng.percent(self.faults.drop_connection) {
            let i = self.rng.below(n) as usize;
            if let Some(conn) = self.clients[i].conn {
                self.core.closed(conn);
                self.clients[i].disconnected();
                self.report.drops += 1;
            }
        }
        if self.rng.percent(self.faults.stall) {
            let i = self.rng.below(n) as usize;
            let c = &mut self.clients[i];
            c.stalled_until_ms =
                self.now.mono_ms + c.negotiated_ms as u64 + 50 + self.rng.below(400);
        }
        if self.rng.percent(self.faults.snapshot) && self.snapshot.is_none() {
            let st = self.core.state();
            let writer = SnapshotWriter::begin(
                Arc::new(self.storage.clone()),
                Path::new(DIR),
                st.last_zxid(),
                st.sessions(),
            )
            .map_err(|e| format!("snapshot start: {e}"))?;
            self.snapshot =
                Some(Snapshotting { writer, cursor: SnapshotCursor::new(), end_zxid: None });
        }
        if self.rng.percent(self.faults.crash) {
            self.crash()?;
        }
        Ok(())
    }

    fn drive_client(&mut self, i: usize, issue: bool) {
        let now = self.now.mono_ms;
        if self.clients[i].stalled_until_ms > now {
            return;
        }
        if self.clients[i].conn.is_none() {
            let conn = self.next_conn;
            self.next_conn += 1;
            self.core.open(conn, peer());
            let frame = self.clients[i].connect_frame(conn, now);
            self.send(i, &frame);
            return;
        }
        if !issue || self.clients[i].connecting || self.clients[i].pending.len() >= 4 {
            return;
        }
        let frame = if self.rng.percent(self.faults.close_session) {
            self.clients[i].close(now)
        } else {
            self.clients[i].random_request(&mut self.rng, now)
        };
        self.send(i, &frame);
    }

    fn send(&mut self, i: usize, frame: &[u8]) {
        let Some(conn) = self.clients[i].conn else { return };
        if self.core.receive(conn, frame, self.now).is_err() {
            self.core.closed(conn);
            self.clients[i].disconnected();
        }
    }

    /// Group commit: transactions go to the log as they are produced; a sync at a random
    /// moment makes everything written so far durable and releases the waiting outputs.
    fn persist(&mut self) -> Result<(), String> {
        let txns: Vec<Txn> = self.core.drain_txns().collect();
        for txn in txns {
            let prev = self.history.last().map_or(self.durable_zxid.min(txn.zxid - 1), |t| t.zxid);
            invariants::zxid_strictly_increases(prev, &txn)?;
            self.log.append(&txn).map_err(|e| format!("append: {e}"))?;
            self.history.push(txn);
            self.report.txns += 1;
        }
        if self.rng.percent(self.faults.sync) {
            self.durable_zxid = self.log.sync().map_err(|e| format!("sync: {e}"))?;
            self.core.mark_durable(self.durable_zxid);
            // As the server's spare thread would, but only half the time, so that rolls both
            // take a spare and create a sparse segment, and crashes find spares half-named.
            if self.log.take_spare_request() && self.rng.percent(50) {
                let made =
                    rzk_storage::prepare_spare(&self.storage, Path::new(DIR), SEGMENT_BYTES, 0)
                        .map_err(|e| format!("spare: {e}"))?;
                self.report.spares += u64::from(made);
            }
        } else if self.rng.percent(30) {
            // Written but not yet synced: what a power cut can tear.
            self.log.write_pending().map_err(|e| format!("write: {e}"))?;
        }
        Ok(())
    }

    fn deliver(&mut self) -> Result<(), String> {
        while let Some(out) = self.core.poll_output() {
            match out {
                Output::Send { conn, frame } => {
                    let Some(i) = self.clients.iter().position(|c| c.conn == Some(conn)) else {
                        continue;
                    };
                    if frame.get(4..8) == Some(&[0xff; 4]) {
                        self.report.events += 1;
                    }
                    for obs in self.clients[i].receive(&frame[4..])? {
                        match obs {
                            Observed::Ack(z) => {
                                if z > self.durable_zxid {
                                    return Err(format!(
                                        "write {z:#x} acknowledged before it was durable ({:#x})",
                                        self.durable_zxid
                                    ));
                                }
                                self.max_acked_zxid = self.max_acked_zxid.max(z);
                                self.report.acks += 1;
                            }
                            Observed::Sequence { parent, seq } => {
                                invariants::sequence_increases(&mut self.sequences, &parent, seq)?;
                            }
                            Observed::Expired => self.report.expirations += 1,
                        }
                    }
                }
                Output::Close { conn, .. } => {
                    self.core.closed(conn);
                    if let Some(c) = self.clients.iter_mut().find(|c| c.conn == Some(conn)) {
                        c.disconnected();
                    }
                }
            }
        }
        Ok(())
    }

    fn advance_snapshot(&mut self) -> Result<(), String> {
        let Some(snap) = self.snapshot.as_mut() else { return Ok(()) };
        if snap.end_zxid.is_none() {
            let max = 1 + self.rng.below(6) as usize;
            let writer = &mut snap.writer;
            let more =
                snap.cursor.next_chunk(self.core.state(), max, |p, n, acl| writer.node(p, n, acl));
            snap.writer.flush().map_err(|e| format!("snapshot write: {e}"))?;
            if !more {
                snap.end_zxid = Some(self.core.state().last_zxid());
            }
            return Ok(());
        }
        // Sealed only once the log is durable through everything the snapshot may hold.
        if snap.end_zxid.is_some_and(|end| end <= self.durable_zxid) {
            let snap = self.snapshot.take().expect("checked");
            let end = snap.end_zxid.expect("checked");
            snap.writer.finish(end).map_err(|e| format!("snapshot finish: {e}"))?;
            self.report.snapshots += 1;
            let retain = 1 + self.rng.below(3) as usize;
            rzk_storage::purge(&self.storage, Path::new(DIR), Path::new(DIR), retain)
                .map_err(|e| format!("purge: {e}"))?;
        }
        Ok(())
    }

    /// Power loss: the disk keeps what was synced and maybe some of what was written; the
    /// machine recovers from it and the clients reconnect to their sessions.
    fn crash(&mut self) -> Result<(), String> {
        self.snapshot = None;
        let after = self.storage.crash(CrashMode::Torn { seed: self.rng.next_u64() });
        let rec = rzk_storage::recover(&after, Path::new(DIR), Path::new(DIR))
            .map_err(|e| format!("recovery: {e}"))?;
        invariants::recovery_matches_replay(
            &rec.state,
            &self.history,
            self.durable_zxid,
            self.max_acked_zxid,
        )?;
        let z = rec.state.last_zxid();
        self.history.retain(|t| t.zxid <= z);
        self.durable_zxid = z;
        self.storage = after;
        let end: LogEnd = rec.log_end;
        self.log =
            LogWriter::open(Arc::new(self.storage.clone()), Path::new(DIR), SEGMENT_BYTES, &end)
                .map_err(|e| format!("log reopen: {e}"))?;
        self.core = Core::with_state(self.config.clone(), rec.state, self.now);
        // Until the shell accepts again, the timer may fire but must expire nothing; from then
        // on each restored session has its full timeout.
        let recovering_ms = self.rng.below(RECOVERY_TO_SERVING_MS_MAX + 1);
        self.now.mono_ms += recovering_ms;
        self.now.wall_ms += recovering_ms as i64;
        let serving_at = self.now.mono_ms;
        self.restored_expiry_floor_ms = self
            .core
            .state()
            .sessions()
            .iter()
            .map(|(id, s)| (*id, serving_at + s.timeout_ms.max(0) as u64))
            .collect();
        self.tick()?;
        self.core.start_serving(self.now);
        for c in &mut self.clients {
            c.disconnected();
        }
        self.report.crashes += 1;
        Ok(())
    }
}
