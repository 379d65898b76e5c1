//! [`StorageError`]: why the data directory cannot be used.

use std::path::{Path, PathBuf};

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
