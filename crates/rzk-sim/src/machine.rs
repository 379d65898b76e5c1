//! The simulated server machine: the real [`Core`] with its log and snapshots on a
//! [`CrashStorage`], doing the shell's durable work (group commit, fuzzy snapshots, power
//! loss and recovery) in steps a driver decides. [`crate::Sim`] drives it with simulated
//! clients; a world of real clients (crates/rzk-world) drives it on virtual time. Each step
//! checks the storage invariants of [`crate::invariants`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rzk_core::state::SnapshotCursor;
use rzk_core::{Config, Core, Now, Txn};
use rzk_storage::{CrashMode, CrashStorage, LogEnd, LogWriter, SnapshotWriter};

use crate::{invariants, Rng};

const DIR: &str = "/sim";
const SEGMENT_BYTES: u64 = 32 * 1024;
/// The longest a restart spends between recovering the state and accepting connections
/// (opening the log, binding), comparable to the clients' session timeouts.
pub const RECOVERY_TO_SERVING_MS_MAX: u64 = 400;

/// Counts of the machine's durable work.
#[derive(Debug, Default, Clone)]
pub struct MachineReport {
    /// Transactions written.
    pub txns: u64,
    /// Crashes and recoveries.
    pub crashes: u64,
    /// Snapshots sealed.
    pub snapshots: u64,
    /// Spare log segments written ahead of a roll.
    pub spares: u64,
}

struct Snapshotting {
    writer: SnapshotWriter,
    cursor: SnapshotCursor,
    end_zxid: Option<i64>,
}

/// One server machine and its disk.
pub struct Machine {
    config: Config,
    storage: CrashStorage,
    log: LogWriter,
    core: Core,
    history: Vec<Txn>,
    durable_zxid: i64,
    max_acked_zxid: i64,
    snapshot: Option<Snapshotting>,
    /// For each session restored by the last recovery, the earliest moment it may expire: a
    /// full timeout after the server started serving again.
    restored_expiry_floor_ms: BTreeMap<i64, u64>,
    report: MachineReport,
}

impl Machine {
    /// A machine with an empty disk, serving from `now`.
    pub fn new(config: Config, now: Now) -> Machine {
        let storage = CrashStorage::new();
        let rec = rzk_storage::recover(&storage, Path::new(DIR), Path::new(DIR))
            .expect("empty disk recovers");
        let log =
            LogWriter::open(Arc::new(storage.clone()), Path::new(DIR), SEGMENT_BYTES, &rec.log_end)
                .expect("log opens");
        let mut core = Core::with_state(config.clone(), rec.state, now);
        core.start_serving(now);
        Machine {
            config,
            storage,
            log,
            core,
            history: Vec::new(),
            durable_zxid: 0,
            max_acked_zxid: 0,
            snapshot: None,
            restored_expiry_floor_ms: BTreeMap::new(),
            report: MachineReport::default(),
        }
    }

    /// The server core.
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// The server core, to feed it connections and frames.
    pub fn core_mut(&mut self) -> &mut Core {
        &mut self.core
    }

    /// What the machine has done so far.
    pub fn report(&self) -> &MachineReport {
        &self.report
    }

    /// The last zxid the log has made durable.
    pub fn durable_zxid(&self) -> i64 {
        self.durable_zxid
    }

    /// Whether a snapshot is being written.
    pub fn snapshotting(&self) -> bool {
        self.snapshot.is_some()
    }

    /// Checks that a client was acknowledged a write at `zxid` only once it was durable.
    ///
    /// # Errors
    /// The violation.
    pub fn acknowledged(&mut self, zxid: i64) -> Result<(), String> {
        if zxid > self.durable_zxid {
            return Err(format!(
                "write {zxid:#x} acknowledged before it was durable ({:#x})",
                self.durable_zxid
            ));
        }
        self.max_acked_zxid = self.max_acked_zxid.max(zxid);
        Ok(())
    }

    /// The timer's tick, checked against the restored sessions' floors.
    ///
    /// # Errors
    /// A restored session expired before its full timeout had passed.
    pub fn tick(&mut self, now: Now) -> Result<(), String> {
        self.restored_expiry_floor_ms.retain(|_, floor| *floor > now.mono_ms);
        let sessions = self.core.state().sessions();
        let protected: Vec<i64> = self
            .restored_expiry_floor_ms
            .keys()
            .copied()
            .filter(|id| sessions.contains_key(id))
            .collect();
        self.core.tick(now);
        invariants::restored_sessions_keep_their_timeout(&protected, self.core.state())
    }

    /// Group commit: transactions go to the log as they are produced; a sync (with
    /// probability `sync_percent`) makes everything written so far durable and releases the
    /// waiting outputs. Returns whether it synced.
    ///
    /// # Errors
    /// A zxid out of order, or a storage failure.
    pub fn persist(&mut self, rng: &mut Rng, sync_percent: u64) -> Result<bool, String> {
        let txns: Vec<Txn> = self.core.drain_txns().collect();
        for txn in txns {
            let prev = self.history.last().map_or(self.durable_zxid.min(txn.zxid - 1), |t| t.zxid);
            invariants::zxid_strictly_increases(prev, &txn)?;
            self.log.append(&txn).map_err(|e| format!("append: {e}"))?;
            self.history.push(txn);
            self.report.txns += 1;
        }
        if rng.percent(sync_percent) {
            self.durable_zxid = self.log.sync().map_err(|e| format!("sync: {e}"))?;
            self.core.mark_durable(self.durable_zxid);
            // As the server's spare thread would, but only half the time, so that rolls both
            // take a spare and create a sparse segment, and crashes find spares half-named.
            if self.log.take_spare_request() && rng.percent(50) {
                let made =
                    rzk_storage::prepare_spare(&self.storage, Path::new(DIR), SEGMENT_BYTES, 0)
                        .map_err(|e| format!("spare: {e}"))?;
                self.report.spares += u64::from(made);
            }
            return Ok(true);
        }
        if rng.percent(30) {
            // Written but not yet synced: what a power cut can tear.
            self.log.write_pending().map_err(|e| format!("write: {e}"))?;
        }
        Ok(false)
    }

    /// Starts a fuzzy snapshot, unless one is running.
    ///
    /// # Errors
    /// A storage failure.
    pub fn start_snapshot(&mut self) -> Result<(), String> {
        if self.snapshot.is_some() {
            return Ok(());
        }
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
        Ok(())
    }

    /// Writes the next chunk of a running snapshot, or seals it once the log is durable
    /// through everything it may hold.
    ///
    /// # Errors
    /// A storage failure.
    pub fn advance_snapshot(&mut self, rng: &mut Rng) -> Result<(), String> {
        let Some(snap) = self.snapshot.as_mut() else { return Ok(()) };
        if snap.end_zxid.is_none() {
            let max = 1 + rng.below(6) as usize;
            let writer = &mut snap.writer;
            let more =
                snap.cursor.next_chunk(self.core.state(), max, |p, n, acl| writer.node(p, n, acl));
            snap.writer.flush().map_err(|e| format!("snapshot write: {e}"))?;
            if !more {
                snap.end_zxid = Some(self.core.state().last_zxid());
            }
            return Ok(());
        }
        if snap.end_zxid.is_some_and(|end| end <= self.durable_zxid) {
            let snap = self.snapshot.take().expect("checked");
            let end = snap.end_zxid.expect("checked");
            snap.writer.finish(end).map_err(|e| format!("snapshot finish: {e}"))?;
            self.report.snapshots += 1;
            let retain = 1 + rng.below(3) as usize;
            rzk_storage::purge(&self.storage, Path::new(DIR), Path::new(DIR), retain)
                .map_err(|e| format!("purge: {e}"))?;
        }
        Ok(())
    }

    /// Power loss: the disk keeps what was synced and maybe some of what was written; the
    /// machine recovers from it at `now` and accepts nothing until [`Machine::serve`]. The
    /// caller drops its connections: the core that knew them is gone.
    ///
    /// # Errors
    /// Recovery failed or lost an acknowledged write.
    pub fn crash(&mut self, rng: &mut Rng, now: Now) -> Result<(), String> {
        self.snapshot = None;
        let after = self.storage.crash(CrashMode::Torn { seed: rng.next_u64() });
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
        self.core = Core::with_state(self.config.clone(), rec.state, now);
        self.report.crashes += 1;
        Ok(())
    }

    /// The recovered machine accepts connections from `now` (at most
    /// [`RECOVERY_TO_SERVING_MS_MAX`] after its crash). Until then the timer may fire but must
    /// expire nothing; from then on each restored session has its full timeout.
    ///
    /// # Errors
    /// A restored session expired early.
    pub fn serve(&mut self, now: Now) -> Result<(), String> {
        self.restored_expiry_floor_ms = self
            .core
            .state()
            .sessions()
            .iter()
            .map(|(id, s)| (*id, now.mono_ms + s.timeout_ms.max(0) as u64))
            .collect();
        self.tick(now)?;
        self.core.start_serving(now);
        Ok(())
    }
}
