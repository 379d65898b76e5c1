//! rzk's benchmark tool, as a library: the `rzk bench` subcommand parses its flags and calls
//! [`run`].
//!
//! `rzk bench` loads any server that speaks the ZooKeeper protocol. The load workloads run
//! on raw, pipelined connections keeping a number of requests outstanding, so that the tool
//! itself is cheap and loads Apache ZooKeeper and rzk identically; latency is measured per
//! request from send to reply (fan-out: from the write to the last notification; the
//! protocol-level handoffs: from the leader's delete to its successor's event). The election
//! workloads run the recipes of rzk-recipes.
//!
//! # Modules
//! - [`config`]: the workloads and their parameters; [`report`]: what a run reports, as text
//!   or JSON. The raw pipelined sessions, the fault proxy and the percentile rule are
//!   rzk-wirekit's, shared with the test suites.
//! - The workloads: `pipeline` (create, set, get, mixed, churn, populate), `fanout`,
//!   `handoff_event` (handoff-event, handoff-read), `race` (handoff-event's race election),
//!   `election` (handoff, selector, failover), `lock` (mutex-handoff, mutex-uncontended,
//!   semaphore), `queue` (queue-pairs) and `counter` (counter-add) on the window of
//!   `throughput`; `propagation` (config-propagation: one write to many config caches);
//!   `discovery` (discovery-expiry); `session_failover` (session-failover: an ensemble
//!   member killed under many sessions); `runner` picks one.
//!
//! # Errors
//! Everything returns [`BenchError`]; [`BenchError::is_usage`] tells a mistake the user can
//! fix from a failed run.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
mod conn;
mod counter;
mod discovery;
mod election;
mod error;
mod fanout;
mod handoff_event;
mod lock;
mod pipeline;
mod propagation;
mod queue;
mod race;
pub mod report;
mod runner;
mod session_failover;
mod sessions;
mod throughput;

pub use config::{BenchConfig, ManySessions, Strategy, Workload};
pub use error::BenchError;
pub use report::Report;
pub use runner::run;
