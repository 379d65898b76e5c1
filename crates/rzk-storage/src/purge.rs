//! [`purge`]: retention of snapshots and log segments (ZooKeeper's `autopurge`).

use std::path::{Path, PathBuf};

use crate::backend::Storage;
use crate::error::StorageError;
use crate::files::remove_if_present;
use crate::{log, snapshot};

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
