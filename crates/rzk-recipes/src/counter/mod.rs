//! Counters and ids: Curator's [`DistributedAtomicLong`] (8 big-endian bytes) and
//! [`SharedCount`] (4), and [`IdGenerator`], unique, strictly increasing ids from
//! PERSISTENT_SEQUENTIAL sequence numbers.
//!
//! **Invariant:** every change is a versioned compare-and-set under a bounded
//! [`RetryPolicy`]: a value is never written over one the caller did not see, and a write whose
//! outcome a connection loss makes unknown is reported as such, never retried blindly.

pub(crate) mod atomic_long;
pub(crate) mod id_generator;
pub(crate) mod shared_count;

pub use atomic_long::{AtomicValue, DistributedAtomicLong, RetryPolicy};
pub use id_generator::IdGenerator;
pub use shared_count::{CountChanges, SharedCount, VersionedCount};
