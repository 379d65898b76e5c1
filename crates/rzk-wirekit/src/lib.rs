//! What rzk's load tool and every test suite share below the recipes: a raw ZooKeeper client
//! that writes exactly the frames it is given, a TCP proxy that injects network faults, and
//! the one percentile rule every report uses.
//!
//! It sits on rzk-proto and rzk-client (for the client's TLS connector) only, so that the
//! test builds of rzk-client and rzk-server, which use these through rzk-testkit, do not
//! compile the recipes or the benchmark workloads.
//!
//! # Modules
//! - [`raw`]: the pipelined client, blocking and async, plain or TLS; the load generator's
//!   sessions and the protocol tests'.
//! - [`proxy`]: the fault-injecting proxy (cut, blackhole, heal): the demo's and the failover
//!   workload's crashed leader, and every test suite's network faults.
//! - [`stats`]: latency samples and the percentile rule.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod proxy;
pub mod raw;
pub mod stats;
