//! A ZooKeeper client on tokio, on rzk-proto's codec.
//!
//! One task per session owns the connection: it writes the requests callers queue, reads
//! replies and notifications on the runtime's own reactor, pings, and resumes the session on
//! another connection (re-registering every watch with `SetWatches`) when one fails. A
//! notification wakes that task, which hands it to the waiting caller: no thread hop.
//!
//! The API follows the `zookeeper-client` crate's names (`create`, `get_and_watch_data`,
//! `check_and_watch_stat`, `list_and_watch_children`, multi writers and readers, persistent
//! watches), so code written against it reads the same.
//!
//! ```no_run
//! # async fn demo() -> Result<(), rzk_client::Error> {
//! use rzk_client::{Acls, Client, CreateMode};
//!
//! let client = Client::connect("127.0.0.1:2181").await?;
//! let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
//! client.create("/hello", b"world", &options).await?;
//! let (data, stat, watcher) = client.get_and_watch_data("/hello").await?;
//! assert_eq!((data.as_slice(), stat.version), (&b"world"[..], 0));
//! client.delete("/hello", None).await?;
//! println!("{:?}", watcher.changed().await.event_type); // NodeDeleted
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! # Modules
//! - `client`: [`Client`] and [`Connector`]; `ops`: the node operations; `multi`: multi
//!   and multiRead.
//! - `core`: the session's bookkeeping with no I/O (xids, requests awaiting replies, the
//!   watch table in `watches`, credentials); `task`: the connection task that drives it.
//! - `hosts`: the connect string and the chroot; `reconnect`: the host order and the pauses
//!   between attempts, with no I/O; `transport`: TCP, or any [`Transport`]; `read_only`:
//!   the search for a read-write server while a session is on a read-only one.
//! - `telemetry`: the client's metrics; `tls` (the `tls` feature): TLS to a secure client
//!   port, a [`Transport`].
//! - `types`, `watcher`, `error`: what callers hand in and get back.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg_attr(not(feature = "bug-switches"), allow(dead_code))]
pub mod bugs;
mod client;
mod core;
mod error;
#[cfg(feature = "gssapi")]
mod gssapi;
mod handshake;
mod hosts;
mod multi;
mod ops;
mod read_only;
mod reconnect;
mod sasl;
mod task;
mod telemetry;
#[cfg(feature = "tls")]
pub mod tls;
mod transport;
mod types;
mod watcher;
mod watches;

pub use client::{Client, Connector, MAX_OUTSTANDING_REQUESTS, STATE_EVENTS_BUFFER};
pub use error::Error;
pub use hosts::ConnectString;
pub use multi::{MultiReadResult, MultiReader, MultiWriteError, MultiWriteResult, MultiWriter};
pub use ops::AuthUser;
pub use rzk_sasl::Jaas;
pub use sasl::{SaslLogin, DEFAULT_SASL_SERVICE, JAAS_CLIENT_SECTION};
pub use telemetry::{
    CONNECT_ATTEMPTS, DISCONNECTED_DURATION, DISCONNECTS, RECONNECTS, REQUEST_DURATION,
};
pub use transport::{OpenFuture, Stream, Tcp, Transport};
pub use types::{
    Acl, Acls, AddWatchMode, AuthId, CreateMode, CreateOptions, CreateSequence, EventType,
    Permission, SessionId, SessionInfo, SessionState, Stat, WatchedEvent, WatcherType,
};
pub use watcher::{OneshotWatcher, PersistentWatcher, StateWatcher, PERSISTENT_WATCH_BACKLOG};
