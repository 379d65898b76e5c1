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
//! - [`recover`] (`recovery.rs`) and [`purge()`] (`purge.rs`): start-up and retention.
//! - [`StorageError`] (`error.rs`); `files.rs`: removal of files that may be gone, and pacing.
//!
//! The on-disk format and the crash argument are in `docs/storage-format.md`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod codec;
mod error;
mod files;
pub mod log;
mod purge;
mod recovery;
pub mod snapshot;

pub use backend::{CrashMode, CrashStorage, FsStorage, Storage, StorageFile};
pub use error::StorageError;
pub use log::{prepare_spare, LogEnd, LogWriter, DEFAULT_SEGMENT_BYTES};
pub use purge::purge;
pub use recovery::{recover, Recovered, RecoveryReport};
pub use snapshot::SnapshotWriter;
