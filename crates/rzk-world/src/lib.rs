//! One seeded world on virtual time: client processes running real rzk-recipes code over
//! rzk-client, against rzk's server core on a crash-injecting disk, with faults drawn from
//! the seed, and the invariants checked over what every process believed and what the
//! server acknowledged.
//!
//! Everything runs on one thread, in a tokio runtime whose clock is paused: a runtime with
//! nothing to do jumps to its next timer, so a minute of world time costs what its events
//! cost. The network is in memory ([`net`]); the server is the real core and storage
//! driven as its shell would drive them ([`server`], over `rzk_sim::Machine`).
//!
//! `run(seed, &Options::default())` runs one world; a failure names the seed, and the same
//! seed runs the same world again, and [`shrink`] reduces it to the few faults that break
//! it. See tests/README.md for seeds, replay and soak runs.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod actors;
pub mod checks;
mod faults;
mod mix;
mod net;
mod replay;
mod server;
mod shrink;
mod sweep;
mod world;

pub use faults::{Kept, CLOCK_DRIFT_PERMILLE_MAX};
pub use mix::{Mix, Recipe, SEMAPHORE_LEASES};
pub use replay::bug_named;
pub use shrink::{shrink, Shrunk};
pub use sweep::{sweep, Totals};
pub use world::{run, Failure, Options, Outcome};
