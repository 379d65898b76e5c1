//! rzk durability: a transaction log, fuzzy snapshots and crash recovery, all behind the
//! [`Storage`] trait so tests can run them on [`CrashStorage`], a disk that loses unsynced
//! bytes on demand.
//!
//! # Layout
//! - [`backend`]: [`Storage`], [`FsStorage`], [`CrashStorage`].
//! - [`codec`]: transaction records.
//! - [`log`]: segments, [`LogWriter`] (group commit: many appends, one sync), and reading with
//!   torn-tail repair.
//! - [`snapshot`]: streaming fuzzy snapshots and their loader.
//! - [`recover`] and [`purge`]: start-up and retention.
//!
//! The on-disk format and the crash argument are in `docs/storage-format.md`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod codec;
pub mod log;
pub mod snapshot;

use std::path::{Path, PathBuf};

use rzk_core::state::Mode;
use rzk_core::State;

pub use backend::{CrashMode, CrashStorage, FsStorage, Storage, StorageFile};
pub use log::{prepare_spare, LogEnd, LogWriter, DEFAULT_SEGMENT_BYTES};
pub use snapshot::SnapshotWriter;

/// Removes `path`; `Ok(false)` if it was already gone, which every caller here wants (a
/// concurrent purge, a snapshot renamed meanwhile, a spare never written).
pub(crate) fn remove_if_present(storage: &dyn Storage, path: &Path) -> Result<bool, StorageError> {
    match storage.remove(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StorageError::io("remove", path, e)),
    }
}

/// Sleeps until `bytes_done` written since `started` no longer exceeds `bytes_per_sec` on
/// average: the pace of background writers (snapshots, spare segments) that share the device
/// with the log's syncs.
pub(crate) fn pace(started: std::time::Instant, bytes_done: u64, bytes_per_sec: u64) {
    let due = std::time::Duration::from_secs_f64(bytes_done as f64 / bytes_per_sec as f64);
    if let Some(ahead) = due.checked_sub(started.elapsed()) {
        std::thread::sleep(ahead);
    }
}

/// Why the data directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// An I/O call failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// On which file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Data that was durable is damaged. Nothing is repaired silently.
    #[error("corrupt data in {file} at offset {offset}: {reason}")]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// Byte offset of the problem.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A snapshot that parses but does not form a tree.
    #[error("snapshot {file} cannot be restored: {source}")]
    Restore {
        /// The snapshot.
        file: PathBuf,
        /// Why.
        source: rzk_core::state::RestoreError,
    },
    /// A logged transaction that does not apply to the recovered state.
    #[error("transaction {zxid:#x} in {dir} does not apply: {source}")]
    Replay {
        /// Its zxid.
        zxid: i64,
        /// The log directory.
        dir: PathBuf,
        /// Why.
        source: rzk_core::ApplyError,
    },
    /// The snapshots and the log do not join up.
    #[error("history is incomplete in {dir}: {reason}")]
    Gap {
        /// The directory.
        dir: PathBuf,
        /// What is missing.
        reason: String,
    },
}

impl StorageError {
    pub(crate) fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        StorageError::Io { op, path: path.to_path_buf(), source }
    }

    pub(crate) fn corrupt(file: &Path, offset: u64, reason: impl Into<String>) -> Self {
        StorageError::Corrupt { file: file.to_path_buf(), offset, reason: reason.into() }
    }
}

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

/// `autopurge`: keeps the newest `retain_snapshots` snapshots (at least 1) and the log
/// segments they need; removes the rest and any abandoned `.tmp` files. Returns the files
/// removed.
///
/// # Errors
/// [`StorageError::Io`] if listing or removing fails.
pub fn purge(
    storage: &dyn Storage,
    snap_dir: &Path,
    log_dir: &Path,
    retain_snapshots: usize,
) -> Result<Vec<PathBuf>, StorageError> {
    let mut removed = Vec::new();
    let mut remove = |path: &Path| {
        if remove_if_present(storage, path)? {
            removed.push(path.to_path_buf());
        }
        Ok::<(), StorageError>(())
    };
    let snaps = snapshot::list_snapshots(storage, snap_dir)?;
    let keep = retain_snapshots.max(1);
    for (_, path) in snaps.iter().skip(keep) {
        remove(path)?;
    }
    // Only temporary files older than the newest sealed snapshot are abandoned; a newer one
    // may be the snapshot the server is writing right now.
    let newest = snaps.first().map(|s| s.0);
    let names = storage.list(snap_dir).map_err(|e| StorageError::io("list", snap_dir, e))?;
    for n in names.iter() {
        let Some(start) = n.strip_suffix(".tmp").and_then(snapshot::parse_snapshot_name) else {
            continue;
        };
        if newest.is_some_and(|newest| start <= newest) {
            remove(&snap_dir.join(n))?;
        }
    }
    if let Some((oldest_start, _)) = snaps.iter().take(keep).next_back() {
        let segments = log::list_segments(storage, log_dir)?;
        for pair in segments.windows(2) {
            let ((_, path), (next_first, _)) = (&pair[0], &pair[1]);
            // Every transaction in this segment is at or before the oldest kept snapshot.
            if *next_first <= oldest_start + 1 {
                remove(path)?;
            }
        }
    }
    if !removed.is_empty() {
        storage.sync_dir(snap_dir).map_err(|e| StorageError::io("fsync dir", snap_dir, e))?;
        storage.sync_dir(log_dir).map_err(|e| StorageError::io("fsync dir", log_dir, e))?;
    }
    Ok(removed)
}
