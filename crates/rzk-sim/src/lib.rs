//! A deterministic simulation of an rzk server: the real [`rzk_core::Core`] and the real
//! log and snapshots on a [`rzk_storage::CrashStorage`], driven by simulated clients under a
//! virtual clock, with faults injected from one seed.
//!
//! The simulator plays the shell's part: it routes frames, feeds transactions to the log,
//! syncs at random moments (group commit), marks them durable, takes fuzzy snapshots in
//! chunks, and crashes and recovers the "machine". After every step it checks the invariants
//! in [`invariants`]; a failure reports the seed, and `Sim::new(seed)` replays it exactly.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod invariants;
pub mod machine;
mod rng;
pub mod sim;

pub use machine::{Machine, MachineReport};
pub use rng::Rng;
pub use sim::{Faults, Sim, SimReport};
