//! rzk's benchmark and demonstration tools, as a library: the `rzk bench` and `rzk demo`
//! subcommands are thin wrappers around it.
//!
//! - [`raw`]: a hand-written, pipelined ZooKeeper client (blocking and async) that writes
//!   exactly the frames it is given; the load generator's sessions, and the protocol tests'.
//! - [`stats`]: the one percentile rule every report uses.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod raw;
pub mod stats;
