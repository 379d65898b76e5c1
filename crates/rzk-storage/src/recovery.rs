//! [`recover`]: the newest valid snapshot, then the log replayed after it.

use std::path::{Path, PathBuf};

use rzk_core::state::Mode;
use rzk_core::State;

use crate::backend::Storage;
use crate::error::StorageError;
use crate::log::{self, LogEnd};
use crate::snapshot;

/// What recovery did, for the start-up log line.
#[derive(Debug, Default)]
pub struct RecoveryReport {
    /// The snapshot loaded, if any.
    pub snapshot: Option<PathBuf>,
    /// Nodes in that snapshot.
    pub snapshot_nodes: usize,
    /// Newer snapshots that failed verification and were skipped.
    pub skipped_snapshots: Vec<String>,
    /// Transactions replayed from the log.
    pub replayed: usize,
    /// A torn log tail that was cut off: (file, offset, bytes).
    pub truncated: Option<(PathBuf, u64, u64)>,
}

/// The recovered state and where the log continues.
#[derive(Debug)]
pub struct Recovered {
    /// The tree and sessions.
    pub state: State,
    /// Where the next transaction goes.
    pub log_end: LogEnd,
    /// What was done.
    pub report: RecoveryReport,
}

/// Loads the newest valid snapshot and replays the log after it.
///
/// A damaged snapshot is skipped for an older one (its log is still there); damaged log data
/// other than an unsynced tail stops recovery with [`StorageError::Corrupt`].
///
/// # Errors
/// See [`StorageError`].
pub fn recover(
    storage: &dyn Storage,
    snap_dir: &Path,
    log_dir: &Path,
) -> Result<Recovered, StorageError> {
    for dir in [snap_dir, log_dir] {
        storage.create_dir_all(dir).map_err(|e| StorageError::io("create", dir, e))?;
    }
    let mut report = RecoveryReport::default();
    let mut state = State::new();
    let mut end_zxid = 0;
    for (_, path) in snapshot::list_snapshots(storage, snap_dir)? {
        let loaded = storage
            .read(&path)
            .map_err(|e| StorageError::io("read", &path, e))
            .and_then(|bytes| snapshot::load(&path, &bytes));
        match loaded {
            Ok(snap) => {
                report.snapshot_nodes = snap.nodes;
                end_zxid = snap.end_zxid;
                state = snap.state;
                report.snapshot = Some(path);
                break;
            }
            Err(e) => report.skipped_snapshots.push(e.to_string()),
        }
    }
    let start = state.last_zxid();
    let gap = |reason: String| StorageError::Gap { dir: log_dir.to_path_buf(), reason };
    let read = log::visit(storage, log_dir, start, |txn| {
        if state.last_zxid() == start && txn.zxid != start + 1 {
            return Err(gap(format!(
                "state is at zxid {start:#x} but the log resumes at {:#x}",
                txn.zxid
            )));
        }
        let mode = if txn.zxid <= end_zxid { Mode::Replay } else { Mode::Strict };
        state.apply_in(&txn, mode).map_err(|source| StorageError::Replay {
            zxid: txn.zxid,
            dir: log_dir.to_path_buf(),
            source,
        })?;
        Ok(())
    })?;
    report.truncated = read.truncated.clone();
    if read.end.last_zxid < end_zxid {
        return Err(gap(format!(
            "snapshot reaches zxid {end_zxid:#x} but the log ends at {:#x}",
            read.end.last_zxid
        )));
    }
    report.replayed = read.visited;
    Ok(Recovered { state, log_end: read.end, report })
}
