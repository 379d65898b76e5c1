//! Curator-compatible ZooKeeper recipes, on the [`rzk_client`] crate (re-exported here):
//! the elections [`LeaderLatch`], [`LeaderSelector`] and [`RaceElection`], and the locks
//! [`InterProcessMutex`], [`InterProcessReadWriteLock`] and [`InterProcessSemaphore`], the
//! [`SimpleDistributedQueue`], [`IdGenerator`], [`DistributedAtomicLong`], [`SharedCount`],
//! [`DistributedBarrier`] and [`DistributedDoubleBarrier`];
//! the elections and locks with what Curator leaves to the user done for you: a fencing token per term, a loss signal that
//! fires before the server can expire the session, guarded writes, a session manager that
//! rejoins after expiry, and refusal to lead beside nodes the recipe cannot order.
//!
//! # Layout
//!
//! - [`Session`]: one managed ZooKeeper session (Curator's `CuratorFramework` role): connection
//!   states `Connected`/`Suspended`/`Reconnected`/`Lost`, a heartbeat that maintains the
//!   [`Lease`], simulated expiry, a new session after `Lost`.
//! - [`LeaderLatch`]: Curator's LeaderLatch. Nodes `_c_<uuid>-latch-<seq>`, the id as data.
//! - [`LeaderSelector`]: Curator's LeaderSelector on the InterProcessMutex layout
//!   (`_c_<uuid>-lock-<seq>`); an async task per term, cancelled on loss; requeue.
//! - [`InterProcessReadWriteLock`]: Curator's read-write lock (`_c_<uuid>-__READ__<seq>`,
//!   `_c_<uuid>-__WRIT__<seq>` in one order), two [`InterProcessMutex`] sides, and a downgrade
//!   that lets no queued writer in.
//! - [`InterProcessSemaphore`]: Curator's InterProcessSemaphoreV2 (`locks/`,
//!   `leases/_c_<uuid>-lease-<seq>`), N leases, each a [`SemaphoreLease`] with a token, a loss
//!   signal and guarded writes; no lease node is left behind.
//! - [`RaceElection`]: the non-fair race for one fixed EPHEMERAL node (Kafka's `/controller`),
//!   with an epoch node beside it that fences the winner's guarded writes and release.
//! - [`SimpleDistributedQueue`]: ZooKeeper's and Curator's queue (`qn-<seq>`, raw bytes):
//!   offer, poll, take on a children watch, each item taken once, lowest sequence first.
//! - [`DistributedQueue`]: Curator's `DistributedQueue` (`queue-<seq>`, Curator's item
//!   envelope, one node per put or put_multi): at most once, or at least once under a lock
//!   path ([`DistributedQueue::consume`]).
//! - [`IdGenerator`]: unique, strictly increasing ids (or disjoint ranges) from
//!   PERSISTENT_SEQUENTIAL sequence numbers, the nodes deleted again.
//! - [`DistributedAtomicLong`] and [`SharedCount`]: Curator's counters (8 and 4 big-endian
//!   bytes), versioned compare-and-set under a bounded [`RetryPolicy`], a watch of changes.
//! - [`DistributedBarrier`] and [`DistributedDoubleBarrier`]: Curator's barriers (the barrier
//!   node's existence; EPHEMERAL `<uuid>` members and `ready`), waits on `exists` watches
//!   that outlive disconnects and session expiries.
//! - [`ServiceDiscovery`]: curator-x-discovery's registry (`<base>/<name>/<id>`, the
//!   [`ServiceInstance`] JSON), instances re-registered with their current data after a
//!   session loss; [`ServiceProvider`] picks one; [`ServerList`] is the plain
//!   EPHEMERAL_SEQUENTIAL `host:port` layout.
//! - [`TreeCache`] and [`NodeCache`]: Curator's `CuratorCache` (a subtree, or one node, mirrored
//!   in memory, with ordered events), converged across disconnects, expiries and
//!   delete-and-recreate; [`JsonNodeCache`] for a serde-typed config node.
//! - [`Contender`]: what both recipes share, and dereference to: status, events, metrics, the
//!   current term, [`Contender::await_leadership`], the participants read from the server.
//! - [`Leadership`]: one term. [`Leadership::token`] is the czxid of our node, strictly
//!   increasing from term to term in one election path; [`Leadership::lost`] resolves the
//!   moment leadership may be lost; [`Leadership::guarded`] builds a multi that checks our
//!   node, so a write after the loss fails with [`Error::NotLeader`].
//!
//! The protocol and its reasoning are in `docs/election.md`.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), rzk_recipes::Error> {
//! use std::time::Duration;
//! use rzk_recipes::{LatchOptions, LeaderLatch, Session, SessionConfig};
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

mod barrier;
#[cfg_attr(not(feature = "bug-switches"), allow(dead_code))]
pub mod bugs;
mod cache;
mod clock;
mod contender;
mod control;
mod counter;
mod decide;
mod double_barrier;
mod driver;
mod error;
mod event;
mod guarded;
mod id;
mod issuer;
mod latch;
mod leadership;
mod lock_status;
mod loss;
mod mailbox;
mod mutex;
mod naming;
mod node_ids;
mod ops;
mod options;
mod participants;
mod queue;
mod race;
mod reaper;
mod rule;
mod rwlock;
mod selector;
mod semaphore;
mod session;
mod shared;
mod shared_count;
mod subscription;
mod term;
mod token;
mod unread;
mod zk_error;

// Service registry and discovery.
mod discovery;
pub use discovery::{
    DownInstancePolicy, Instances, MalformedInstance, ProviderStrategy, Random, RoundRobin,
    ServerEntry, ServerList, Servers, ServiceDiscovery, ServiceInstance, ServiceProvider,
    ServiceType, UriPart, UriSpec, DEFAULT_BASE_PATH, MAX_SEGMENT_BYTES, SERVER_PREFIX,
};
pub use discovery::{LiveChanges, ServerCache, ServerChanges, ServiceCache, ServiceChanges};

pub use barrier::DistributedBarrier;
pub use contender::Contender;
pub use control::BoxError;
pub use counter::{AtomicValue, DistributedAtomicLong, RetryPolicy};
pub use double_barrier::DistributedDoubleBarrier;
pub use error::Error;
pub use event::{ElectionEvent, Events, JoinInfo, Metrics, Participant, Participants, Status};
pub use guarded::GuardedWrite;
pub use id::IdGenerator;
pub use latch::LeaderLatch;
pub use leadership::Leadership;
pub use lock_status::{LockEntry, LockKind, LockLayout, LockStatus};
pub use loss::{LossReason, Lost};
pub use mutex::{InterProcessMutex, LockGuard};
pub use node_ids::seed_node_ids;
pub use options::{
    CloseMode, ConnectionPolicy, ElectionOptions, LatchOptions, MutexOptions, RaceOptions,
    SelectorOptions, WatchStrategy,
};
pub use queue::SimpleDistributedQueue;
pub use race::RaceElection;
pub use rwlock::InterProcessReadWriteLock;
pub use selector::LeaderSelector;

// Curator's DistributedQueue.
mod curator_envelope;
mod curator_queue;
mod queue_lock;
pub use curator_queue::{DistributedQueue, ErrorMode};
pub use rzk_client;
mod acl_provider;
pub use acl_provider::{AclProvider, CreatorOnlyAclProvider, OpenAclProvider};
pub use rzk_client::{Jaas, SaslLogin, SessionId};
pub use semaphore::{InterProcessSemaphore, SemaphoreLease, SemaphoreOptions};
pub use session::{
    ConnectionEvent, ConnectionEvents, ConnectionState, Credential, Lease, Session, SessionConfig,
};
pub use shared_count::{CountChanges, SharedCount, VersionedCount};
pub use token::FencingToken;

pub use cache::{
    CacheEvent, CacheEvents, CacheItem, CacheOptions, CacheWatch, CachedNode, JsonChanges,
    JsonNodeCache, NodeCache, NodeChanges, NodeState, TreeCache, Versioned, DEFAULT_EVENT_QUEUE,
    DEFAULT_MAX_NODES,
};
// Client-side metrics through the `metrics` facade: the names an application's exporter sees.
pub mod telemetry;
// TLS to a secure client port (`SessionConfig::with_tls`): rzk-client's, re-exported.
pub use rzk_client::tls;
pub use tls::TlsConfig;
