//! Locks: Curator's [`InterProcessMutex`], [`InterProcessReadWriteLock`] and
//! [`InterProcessSemaphore`] (InterProcessSemaphoreV2), and [`LockStatus`], who holds each of
//! them and who waits, read from the server.
//!
//! **Invariant:** at most N holders at any instant on the world's clock (one for a mutex, a
//! writer alone for a read-write lock), each with a token and a loss signal; a release that
//! returns has deleted its node, and no lease node is left behind while its session lives (the
//! semaphore's reaper deletes every node nobody holds). A read-write lock's downgrade joins the
//! read side in a multi that checks the write node, so no queued writer gets in between.

pub(crate) mod holders;
pub(crate) mod lease_reaper;
pub(crate) mod mutex;
pub(crate) mod rwlock;
pub(crate) mod semaphore;

pub use crate::driver::election_options::MutexOptions;
pub use holders::{LockEntry, LockKind, LockLayout, LockStatus};
pub use mutex::{InterProcessMutex, LockGuard};
pub use rwlock::InterProcessReadWriteLock;
pub use semaphore::{InterProcessSemaphore, SemaphoreLease, SemaphoreOptions};

/// The child of a semaphore's path under which its InterProcessMutex queues
/// (`InterProcessSemaphoreV2`'s `locks`): the semaphore writes it, the holder reader reads it.
pub(crate) const LOCKS: &str = "locks";
/// The child of a semaphore's path that holds one node per lease (`leases`).
pub(crate) const LEASES: &str = "leases";
