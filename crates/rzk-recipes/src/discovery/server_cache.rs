//! [`ServerCache`]: a live view of a [`ServerList`](crate::discovery::ServerList)'s servers.

use super::live::{Decoded, LiveChanges, LiveSet};
use super::server_list::{decode_server, ServerEntry, Servers};
use crate::naming;
use crate::session::Session;
use crate::Error;

/// The server lists of a [`ServerCache`], one after each change.
pub type ServerChanges = LiveChanges<ServerEntry, Servers>;

/// The servers under one parent (`/servers`) held in memory and kept equal to the server, on
/// the same one-level [`TreeCache`](crate::cache::TreeCache) as [`ServiceCache`](crate::discovery::ServiceCache),
/// with its guarantees. A node whose data is not UTF-8 is skipped: logged once per state at
/// `warn` and listed in [`Servers::malformed`].
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{discovery::ServerCache, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let servers = ServerCache::new(&session, "/servers")?;
/// let mut lists = servers.changes();
/// while let Some(list) = lists.next().await {
///     let addresses: Vec<String> = list?.servers.into_iter().map(|s| s.address).collect();
///     println!("online: {addresses:?}");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ServerCache {
    live: LiveSet,
}

impl ServerCache {
    /// Starts caching the servers under `parent` (in the background, on the current tokio
    /// runtime). Nothing is written; the parent may not exist yet.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(session: &Session, parent: &str) -> Result<Self, Error> {
        naming::validate_path(parent)?;
        Ok(ServerCache { live: LiveSet::new(session, parent)? })
    }

    /// The cached servers, by node name (empty before the first load).
    pub fn servers(&self) -> Servers {
        Servers::from(self.live.current(decode_server))
    }

    /// The list once the cache is loaded, then after every change of it.
    pub fn changes(&self) -> ServerChanges {
        self.live.changes(decode_server)
    }

    /// Waits for the first complete load.
    ///
    /// # Errors
    /// As [`TreeCache::initialized`](crate::cache::TreeCache::initialized).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<(), Error> {
        self.live.cache().initialized().await
    }

    /// Stops the cache: its streams end, its list stays as it was.
    pub fn close(&self) {
        self.live.cache().close();
    }
}

impl From<Decoded<ServerEntry>> for Servers {
    fn from(d: Decoded<ServerEntry>) -> Self {
        Servers { servers: d.items, malformed: d.malformed }
    }
}
