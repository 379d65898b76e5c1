//! File chores shared by the log and the snapshots: removing a file that may be gone, and
//! pacing background writes.

use std::path::Path;

use crate::backend::Storage;
use crate::error::StorageError;

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
