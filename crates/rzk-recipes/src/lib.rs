//! Curator-compatible ZooKeeper recipes on the [`rzk_client`] crate (re-exported here), each
//! with what Curator leaves to the user done for you: a fencing token per term, a loss signal
//! that fires before the server can expire the session, guarded writes, a session manager that
//! rejoins after expiry, and refusal to lead beside nodes the recipe cannot order.
//!
//! # Families
//!
//! Each family is a module; [`prelude`] brings the handful of names most programs use.
//!
//! - [`session`], one managed ZooKeeper session ([`Session`](session::Session), Curator's
//!   `CuratorFramework`): connection states `Connected`/`Suspended`/`Reconnected`/`Lost`, a
//!   heartbeat that maintains the [`Lease`](session::Lease), a new session after `Lost`; ACL
//!   providers.
//! - [`election`], [`LeaderLatch`](election::LeaderLatch) (`_c_<uuid>-latch-<seq>`),
//!   [`LeaderSelector`](election::LeaderSelector) (an async task per term, on the
//!   InterProcessMutex layout) and [`RaceElection`](election::RaceElection) (one fixed
//!   EPHEMERAL node, fenced by an epoch node beside it); the [`Contender`](election::Contender)
//!   each dereferences to: status, events, metrics, participants.
//! - [`lock`], [`InterProcessMutex`](lock::InterProcessMutex),
//!   [`InterProcessReadWriteLock`](lock::InterProcessReadWriteLock) (a downgrade that lets no
//!   queued writer in), [`InterProcessSemaphore`](lock::InterProcessSemaphore) (N leases, no
//!   lease node left behind), and [`LockStatus`](lock::LockStatus), who holds and who waits.
//! - [`queue`], [`SimpleDistributedQueue`](queue::SimpleDistributedQueue) (`qn-<seq>`) and
//!   Curator's [`DistributedQueue`](queue::DistributedQueue); each item taken once.
//! - [`counter`], [`DistributedAtomicLong`](counter::DistributedAtomicLong),
//!   [`SharedCount`](counter::SharedCount), [`IdGenerator`](counter::IdGenerator).
//! - [`barrier`], [`DistributedBarrier`](barrier::DistributedBarrier) and
//!   [`DistributedDoubleBarrier`](barrier::DistributedDoubleBarrier).
//! - [`cache`], [`TreeCache`](cache::TreeCache), [`NodeCache`](cache::NodeCache) and
//!   [`JsonNodeCache`](cache::JsonNodeCache) (Curator's `CuratorCache`), converged across
//!   disconnects, expiries and delete-and-recreate.
//! - [`discovery`], curator-x-discovery's registry
//!   ([`ServiceDiscovery`](discovery::ServiceDiscovery), its JSON
//!   [`ServiceInstance`](discovery::ServiceInstance), [`ServiceCache`](discovery::ServiceCache),
//!   [`ServiceProvider`](discovery::ServiceProvider)) and the plain `host:port` layout
//!   ([`ServerList`](discovery::ServerList)), registrations kept across session losses.
//!
//! What every holding recipe shares sits at the root: [`Leadership`], one term, whose
//! [`token`](Leadership::token) is the czxid of our node (strictly increasing from term to term
//! on one path), whose [`lost`](Leadership::lost) resolves the moment the term may be over,
//! and whose [`guarded`](Leadership::guarded) multi checks our node, so a write after the loss
//! fails with [`Error::NotLeader`]; [`FencingToken`], [`LossReason`], [`Lost`],
//! [`GuardedWrite`], and the crate's [`Error`].
//!
//! Inside, the families stand on two layers of their own: `driver/`, the one task per queue
//! recipe that owns its state and every ZooKeeper future, and `term/`, one term with its lease
//! and loss signal; both on `session/`. The protocol and its reasoning are in
//! `docs/election.md`.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), rzk_recipes::Error> {
//! use std::time::Duration;
//! use rzk_recipes::prelude::*;
//!
//! let session = Session::connect(
//!     SessionConfig::new("127.0.0.1:2181").with_session_timeout(Duration::from_secs(4)),
//! )
//! .await?;
//! let latch = LeaderLatch::new(&session, "/demo/leader", LatchOptions::default().with_id("a"))?;
//! latch.start().await?;
//! loop {
//!     let leadership = latch.await_leadership().await?;
//!     println!("leading, token {}", leadership.token());
//!     // Do the work; stop as soon as leadership may be lost.
//!     let reason = leadership.lost().await;
//!     println!("stepped down: {reason}");
//! }
//! # }
//! ```
//!
//! # Mixing clients
//!
//! Java Curator latches (or selectors) and these can share one path: same names, same order.
//! A path that also holds nodes this recipe cannot order (kazoo's `__lock__`, a latch node in a
//! selector path, junk) makes it refuse to lead with [`Error::ForeignNodes`]: such mixes give
//! two leaders in every implementation, and ours is the one it can stop.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The families, each a public module.
pub mod barrier;
pub mod cache;
pub mod counter;
pub mod discovery;
pub mod election;
pub mod lock;
pub mod queue;
pub mod session;

// The layers under them.
mod driver;
mod term;

// Crate-wide leaves.
#[cfg_attr(not(feature = "bug-switches"), allow(dead_code))]
pub mod bugs;
mod clock;
mod error;
mod loss;
mod naming;
pub mod prelude;
mod subscription;
// Client-side metrics through the `metrics` facade: the names an application's exporter sees.
pub mod telemetry;
mod zk_error;

pub use error::Error;
pub use loss::{LossReason, Lost};
pub use naming::seed_node_ids;
pub use rzk_client;
// TLS to a secure client port (`SessionConfig::with_tls`): rzk-client's, re-exported.
pub use rzk_client::tls;
pub use term::{BoxError, FencingToken, GuardedWrite, Leadership};
