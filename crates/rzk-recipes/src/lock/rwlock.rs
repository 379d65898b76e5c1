//! Curator's InterProcessReadWriteLock: a read side and a write side, each an
//! [`InterProcessMutex`] on the shared queue driver, ordered together on one path.

use crate::driver::election_options::MutexOptions;
use crate::driver::rule;
use crate::lock::mutex::InterProcessMutex;
use crate::session::Session;
use crate::Error;

/// A distributed read-write lock in Curator's `InterProcessReadWriteLock` layout, so Java
/// Curator processes and this one share one lock: write nodes
/// `<path>/_c_<uuid>-__WRIT__<seq>` and read nodes `<path>/_c_<uuid>-__READ__<seq>`,
/// EPHEMERAL_SEQUENTIAL, in one order by sequence. A writer holds when its node sorts first
/// and watches the node before it; a reader holds when no write node sorts before its own and
/// watches the nearest one that does. Readers share; writers exclude everyone; the order is
/// first come, first served across both kinds.
///
/// Each side is an [`InterProcessMutex`] (acquire, timeout, try, guards with a fencing
/// token, `lost()` and guarded writes, re-entrant per handle) on a driver of its own.
///
/// **Downgrade.** While this handle holds the write lock, acquiring the read lock is granted
/// at once: its node is a plain EPHEMERAL `_c_<uuid>-__READ__<the write node's sequence>`,
/// created in one multi with a check that the write node exists, so it sorts exactly where
/// the write node does. Releasing the write lock then leaves the read held, and a writer
/// queued meanwhile still waits for it (the gap CURATOR-621 describes). Upgrading (the write
/// lock while this handle holds the read lock) waits for the read to be released, as in
/// Curator: release the read first.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{lock::{InterProcessReadWriteLock, MutexOptions}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let lock = InterProcessReadWriteLock::new(&session, "/locks/catalog", MutexOptions::default())?;
/// let write = lock.write_lock().acquire().await?;
/// // ... update, then keep reading what was written without letting a writer in:
/// let read = lock.read_lock().acquire().await?;
/// write.release().await?;
/// println!("reading with fencing token {}", read.token());
/// read.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct InterProcessReadWriteLock {
    read: InterProcessMutex,
    write: InterProcessMutex,
}

impl InterProcessReadWriteLock {
    /// A read-write lock on `path` (nothing is created before the first acquire). Both sides
    /// take `options` (the id is the nodes' data, the host's address by default, as Curator's).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str, options: MutexOptions) -> Result<Self, Error> {
        let write = InterProcessMutex::with_rule(session, path, rule::WRITE, options.clone())?;
        let read = InterProcessMutex::with_rule(session, path, rule::READ, options)?.beside(&write);
        Ok(InterProcessReadWriteLock { read, write })
    }

    /// The read side: shared with other readers, excluded by writers.
    pub fn read_lock(&self) -> &InterProcessMutex {
        &self.read
    }

    /// The write side: exclusive.
    pub fn write_lock(&self) -> &InterProcessMutex {
        &self.write
    }

    /// Closes both sides (see [`InterProcessMutex::close`]).
    ///
    /// # Errors
    /// The first error of the two closes.
    ///
    /// # Cancellation safety
    /// Both closes start synchronously and complete in the background.
    pub async fn close(self) -> Result<(), Error> {
        let (read, write) = tokio::join!(self.read.close(), self.write.close());
        read.and(write)
    }
}
