//! The plain online/offline layout many ZooKeeper tutorials use: each server an
//! EPHEMERAL_SEQUENTIAL node `<parent>/server<sequence>` holding `host:port`.

use std::sync::atomic::{AtomicU64, Ordering};

use rzk_client::CreateMode;

use super::query::{self, MalformedInstance};
use super::registrar::{Entry, Registrar};
use crate::naming;
use crate::session::Session;
use crate::Error;

/// The name prefix of a server's node (`server0000000001`).
pub const SERVER_PREFIX: &str = "server";

/// One listed server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerEntry {
    /// The node's name (`server0000000001`).
    pub name: String,
    /// Its data, `host:port` by convention.
    pub address: String,
}

/// What a listing found.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Servers {
    /// The servers, by node name.
    pub servers: Vec<ServerEntry>,
    /// Nodes whose data is not UTF-8: skipped.
    pub malformed: Vec<MalformedInstance>,
}

/// Servers going on- and offline under one parent node (`/servers`): each registration an
/// EPHEMERAL_SEQUENTIAL `server<sequence>` node with its address as data, gone when its
/// session ends, re-created (with a new sequence number and the current address) on a new
/// session. The parent is created as a container.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{discovery::ServerList, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let servers = ServerList::new(&session, "/servers")?;
/// let key = servers.register("10.0.0.7:8080").await?;
/// for s in servers.list().await?.servers {
///     println!("{} is at {}", s.name, s.address);
/// }
/// servers.unregister(&key).await?;
/// # Ok(()) }
/// ```
pub struct ServerList {
    registrar: Registrar,
    parent: String,
    next_key: AtomicU64,
}

impl std::fmt::Debug for ServerList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerList").field("parent", &self.parent).finish()
    }
}

impl ServerList {
    /// The servers under `parent`, their nodes created with the ACLs of the session's
    /// [`crate::session::AclProvider`] (nothing is written before a registration).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, parent: &str) -> Result<Self, Error> {
        naming::validate_path(parent)?;
        Ok(ServerList {
            registrar: Registrar::new(session, None),
            parent: parent.to_string(),
            next_key: AtomicU64::new(0),
        })
    }

    /// Registers a server at `address` until unregistered or the list is dropped; returns the
    /// key that [`ServerList::unregister`] and [`ServerList::path_of`] take.
    ///
    /// # Errors
    /// [`Error::NoAuth`] and other fatal ZooKeeper errors; [`Error::Closed`].
    ///
    /// # Cancellation safety
    /// A dropped registration stays in the list (and is settled at the next reconnection);
    /// a create whose reply was lost is found again rather than duplicated.
    pub async fn register(&self, address: &str) -> Result<String, Error> {
        let key = format!("{}", self.next_key.fetch_add(1, Ordering::Relaxed));
        let target = naming::child_path(&self.parent, SERVER_PREFIX);
        let entry =
            Entry::new(target, CreateMode::EphemeralSequential, address.as_bytes().to_vec());
        self.registrar.register(&key, entry).await?;
        Ok(key)
    }

    /// The current node of registration `key` (it changes when a new session re-creates it).
    pub async fn path_of(&self, key: &str) -> Option<String> {
        self.registrar.paths().await.into_iter().find(|(k, _)| k == key).map(|(_, p)| p)
    }

    /// Unregisters `key` and deletes its node; false if it was not registered.
    ///
    /// # Errors
    /// [`Error::Closed`]; fatal ZooKeeper errors.
    ///
    /// # Cancellation safety
    /// The registration is forgotten first; a dropped future may leave the node until the
    /// session ends.
    pub async fn unregister(&self, key: &str) -> Result<bool, Error> {
        self.registrar.unregister(key).await
    }

    /// Every server under the parent (anyone's), sorted by node name; empty when the parent
    /// does not exist.
    ///
    /// # Errors
    /// [`Error::NoAuth`]; [`Error::Closed`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn list(&self) -> Result<Servers, Error> {
        let nodes = query::children_with_data(self.registrar.session(), &self.parent).await?;
        let mut found = Servers::default();
        for (path, bytes) in nodes {
            match decode_server(naming::name_of(&path), &bytes) {
                Ok(entry) => found.servers.push(entry),
                Err(reason) => {
                    tracing::warn!(%path, %reason, "skipping a server node");
                    found.malformed.push(MalformedInstance { path, reason });
                }
            }
        }
        Ok(found)
    }
}

/// A server node's entry: its name, and its data as the address.
pub(super) fn decode_server(name: &str, data: &[u8]) -> Result<ServerEntry, String> {
    match std::str::from_utf8(data) {
        Ok(address) => Ok(ServerEntry { name: name.to_string(), address: address.to_string() }),
        Err(e) => Err(format!("not UTF-8: {e}")),
    }
}
