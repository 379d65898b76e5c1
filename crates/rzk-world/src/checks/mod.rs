//! The world's invariants, as functions over what the processes saw and what the server
//! holds, each with a unit test that shows it catching a violation: the terms of the locks,
//! elections and leases (`terms.rs`) and the data of the counter and the queue (`data.rs`).

mod data;
mod terms;

pub use data::{counter_adds_up, queue_takes_once, CounterLog, QueueLog};
pub use terms::{fenced_writes, read_write_exclusive, terms_exclusive, writes_inside_terms, Term};
