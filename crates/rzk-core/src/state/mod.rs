//! The replicated state: the data tree and the durable session table.
//!
//! [`State::apply`] is the only mutator, used both for live writes and for log replay, so a
//! recovered server is byte-for-byte the server that wrote the log.
//!
//! This module only names its parts; each file holds one of them:
//! - `node`: [`Node`], its [`Children`] and [`SessionRecord`], the stored shapes.
//! - `table`: the node table, path to node, sharded so that its growth never pauses for long.
//! - `tree`: [`State`] itself, its indexes and the queries on it.
//! - `apply`: [`State::apply`] and what it reports ([`Applied`], [`Fired`], [`ApplyError`]).
//! - `restore`: [`StateBuilder`], rebuilding a state from a snapshot.
//! - `snapshot_cursor`: [`SnapshotCursor`], the chunked walk that writes a fuzzy snapshot.
//! - `compare`: [`State::difference`], for recovery checks.

mod apply;
mod compare;
mod node;
mod restore;
mod snapshot_cursor;
mod table;
mod tree;

pub use self::apply::{Applied, ApplyError, Fired, Mode, Trigger};
pub use self::node::{data_len, Children, Node, NodeMeta, SessionRecord};
pub use self::restore::{RestoreError, RestoredNode, StateBuilder};
pub use self::snapshot_cursor::SnapshotCursor;
pub use self::tree::{State, SPECIAL_PATHS};
