//! Queues: ZooKeeper's own recipe as Curator's [`SimpleDistributedQueue`] (`qn-<seq>`, raw
//! bytes), and Curator's [`DistributedQueue`] (`queue-<seq>`, Curator's item envelope), at
//! most once, or at least once under a lock path.
//!
//! **Invariant:** each item is taken by exactly one consumer: only the delete that removes an
//! item returns it, lowest sequence first; nothing is retried behind the caller's back, so
//! nothing is duplicated; a take's answer is never lost between the task that removed the
//! item and the caller (`unread`).
//!
//! - `simple`: the take machinery both queues run on, and the simple queue; `layout`: how a
//!   queue's items are named and read;
//! - `distributed`: Curator's queue; `envelope`: its item format; `item_lock`: the lock node
//!   of an item processed under a lock path.

pub(crate) mod distributed;
pub(crate) mod envelope;
pub(crate) mod item_lock;
pub(crate) mod layout;
pub(crate) mod simple;
pub(crate) mod unread;

pub use distributed::{DistributedQueue, ErrorMode};
pub use simple::SimpleDistributedQueue;
