//! The simulation loop: the shell's job, done deterministically.

use std::collections::HashMap;
use std::net::SocketAddr;

use rzk_core::{Config, ConnId, Now, Output};

use crate::client::{Observed, SimClient};
use crate::machine::{Machine, RECOVERY_TO_SERVING_MS_MAX};
use crate::{invariants, Rng};

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

/// A simulated server with its clients.
pub struct Sim {
    seed: u64,
    rng: Rng,
    now: Now,
    machine: Machine,
    clients: Vec<SimClient>,
    next_conn: ConnId,
    sequences: HashMap<String, i64>,
    faults: Faults,
    report: SimReport,
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
        let machine = Machine::new(config, now);
        let clients =
            (0..clients).map(|i| SimClient::new(i, 300 + 100 * rng.below(10) as i32)).collect();
        Sim {
            seed,
            rng,
            now,
            machine,
            clients,
            next_conn: 1,
            sequences: HashMap::new(),
            faults,
            report: SimReport::default(),
        }
    }

    /// What happened so far.
    pub fn report(&self) -> SimReport {
        let m = self.machine.report();
        SimReport {
            txns: m.txns,
            crashes: m.crashes,
            snapshots: m.snapshots,
            spares: m.spares,
            ..self.report.clone()
        }
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
        self.machine.persist(&mut self.rng, self.faults.sync)?;
        self.deliver()?;
        self.machine.advance_snapshot(&mut self.rng)?;
        invariants::ephemerals_have_live_owners(self.machine.core().state())
    }

    fn tick(&mut self) -> Result<(), String> {
        self.machine.tick(self.now)
    }

    fn inject_faults(&mut self) -> Result<(), String> {
        let n = self.clients.len() as u64;
        if self.rng.percent(self.faults.drop_connection) {
            let i = self.rng.below(n) as usize;
            if let Some(conn) = self.clients[i].conn {
                self.machine.core_mut().closed(conn);
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
        if self.rng.percent(self.faults.snapshot) {
            self.machine.start_snapshot()?;
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
            self.machine.core_mut().open(conn, peer());
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
        if self.machine.core_mut().receive(conn, frame, self.now).is_err() {
            self.machine.core_mut().closed(conn);
            self.clients[i].disconnected();
        }
    }

    fn deliver(&mut self) -> Result<(), String> {
        while let Some(out) = self.machine.core_mut().poll_output() {
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
                                self.machine.acknowledged(z)?;
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
                    self.machine.core_mut().closed(conn);
                    if let Some(c) = self.clients.iter_mut().find(|c| c.conn == Some(conn)) {
                        c.disconnected();
                    }
                }
            }
        }
        Ok(())
    }

    /// Power loss: the machine recovers from its disk, and the clients reconnect to their
    /// sessions once it serves again.
    fn crash(&mut self) -> Result<(), String> {
        self.machine.crash(&mut self.rng, self.now)?;
        let recovering_ms = self.rng.below(RECOVERY_TO_SERVING_MS_MAX + 1);
        self.now.mono_ms += recovering_ms;
        self.now.wall_ms += recovering_ms as i64;
        self.machine.serve(self.now)?;
        for c in &mut self.clients {
            c.disconnected();
        }
        Ok(())
    }
}
