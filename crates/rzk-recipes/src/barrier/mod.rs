//! Barriers: Curator's [`DistributedBarrier`] (up while its node exists) and
//! [`DistributedDoubleBarrier`] (EPHEMERAL `<uuid>` members and `ready`: enter together,
//! leave together).
//!
//! **Invariant:** a wait ends only on what the server says (the node gone, the member count
//! reached, `ready` present): its `exists` watches outlive disconnects and session expiries,
//! and a member node is ours only in the session that created it, never counted after an
//! expiry.

pub(crate) mod double;
pub(crate) mod single;

pub use double::DistributedDoubleBarrier;
pub use single::DistributedBarrier;
