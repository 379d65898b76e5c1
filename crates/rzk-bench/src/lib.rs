//! rzk's benchmark and demonstration tools, as a library: the `rzk bench` and `rzk demo`
//! subcommands parse their flags and call [`run`] and [`demo::run`].
//!
//! `rzk bench` loads any server that speaks the ZooKeeper protocol. The load workloads run
//! on raw, pipelined connections keeping a number of requests outstanding, so that the tool
//! itself is cheap and loads Apache ZooKeeper and rzk identically; latency is measured per
//! request from send to reply (fan-out: from the write to the last notification; the
//! protocol-level handoffs: from the leader's delete to its successor's event). The election
//! workloads run the recipes of rzk-recipes.
//!
//! # Modules
//! - [`raw`]: a hand-written, pipelined ZooKeeper client (blocking and async) that writes
//!   exactly the frames it is given; the load generator's sessions, and the protocol tests'.
//! - [`config`]: the workloads and their parameters; [`report`]: what a run reports, as text
//!   or JSON; [`stats`]: samples and the one percentile rule every report uses.
//! - The workloads: `pipeline` (create, set, get, mixed, churn, populate), `fanout`,
//!   `handoff_event` (handoff-event, handoff-read), `race` (handoff-event's race election),
//!   `election` (handoff, selector, failover), `lock` (mutex-handoff, mutex-uncontended,
//!   semaphore), `queue` (queue-pairs) and `counter` (counter-add) on the window of
//!   `throughput`; `propagation` (config-propagation: one write to many config caches);
//!   `discovery` (discovery-expiry); `session_failover` (session-failover: an ensemble
//!   member killed under many sessions); `runner` picks one.
//! - [`demo`]: the scenarios of `rzk demo`; [`proxy`]: the one fault-injecting TCP proxy
//!   (cut, blackhole, heal), which cuts a client off the network for the demo and the failover
//!   workload, and serves every test suite's network faults through rzk-testkit.
//!
//! # Errors
//! Everything returns [`BenchError`]; [`BenchError::is_usage`] tells a mistake the user can
//! fix from a failed run.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
mod conn;
mod counter;
pub mod demo;
mod discovery;
mod election;
mod error;
mod fanout;
mod handoff_event;
mod lock;
mod pipeline;
mod propagation;
pub mod proxy;
mod queue;
mod race;
pub mod raw;
pub mod report;
mod runner;
mod session_failover;
pub mod stats;
mod throughput;

pub use config::{BenchConfig, Strategy, Workload};
pub use error::BenchError;
pub use report::Report;
pub use runner::run;
