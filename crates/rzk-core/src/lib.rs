//! The rzk server core: a ZooKeeper server as a deterministic state machine.
//!
//! Requests, connection events and the current time go in; reply frames, watch
//! notifications, connection closes and transactions to persist come out. There is no clock,
//! no socket, no file and no unseeded randomness in this crate, so the same inputs always give
//! the same outputs, which is what the simulator relies on.
//!
//! # Layout
//! - [`core`]: [`Core`], connections, sessions, the durability barrier on outputs.
//! - [`state`]: [`State`], the data tree and session table; changed only by [`State::apply`];
//!   its node table is sharded so that its growth never pauses the server for long.
//! - [`txn`]: [`Txn`], the durable record of a change.
//! - `prep`: validation of writes into transactions, in ZooKeeper's check order.
//! - [`watches`]: one-shot, persistent and recursive watches.
//! - [`acl`], [`path`]: ACL schemes and path rules.
//! - [`four_letter`]: `ruok`, `srvr`, `mntr` and friends.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
pub mod config;
pub mod core;
pub mod four_letter;
pub mod path;
mod prep;
pub mod sasl_mechanism;
pub mod state;
pub mod txn;
pub mod watches;

pub use crate::config::Config;
pub use crate::core::{CloseReason, ConnError, Core, Counters, Now, Output};
pub use crate::state::{ApplyError, State};
pub use crate::txn::{Txn, TxnOp};
pub use crate::watches::{ConnId, WatchLimits};

/// The ZooKeeper version rzk reports (`srvr`, `envi`): the 3.9 protocol it implements.
pub const ZOOKEEPER_COMPAT_VERSION: &str = "3.9.2";
