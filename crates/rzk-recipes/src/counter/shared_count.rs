//! Curator's `SharedCount`: one node holding a signed 32-bit number as 4 big-endian bytes,
//! read with its version, set with a version check, watched for changes.

use rzk_client::{Acls, Client, EventType};

use crate::session::acl_provider::NodeAcls;
use tokio::sync::mpsc;

use crate::naming;
use crate::session::ops;
use crate::session::Session;
use crate::zk_error::ZkError;
use crate::Error;

/// The size of a `SharedCount` value.
const INT_BYTES: usize = 4;
/// Changes a slow [`CountChanges`] reader may fall behind by; the watcher waits beyond that.
const CHANGE_BUFFER: usize = 16;

/// A count and the node version it was read at (Curator's `VersionedValue<Integer>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionedCount {
    /// The count.
    pub value: i32,
    /// The node's data version, for [`SharedCount::try_set_count`].
    pub version: i32,
}

/// A shared count in Curator's `SharedCount` layout: the node's data is the count as 4
/// big-endian bytes, created with a seed value if absent. Java Curator and this share one
/// count: [`SharedCount::try_set_count`] succeeds only over the version it read.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{counter::SharedCount, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let count = SharedCount::new(&session, "/counts/workers", 0)?;
/// let mut changes = count.changes();
/// let now = count.get().await?;
/// if count.try_set_count(now.value + 1, now.version).await? {
///     println!("raised to {}", now.value + 1);
/// }
/// let seen = changes.next().await; // the first value, then every change
/// # let _ = seen; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SharedCount {
    session: Session,
    path: String,
    seed: i32,
    acls: NodeAcls,
}

impl SharedCount {
    /// A count at `path`, created with `seed` by the first read if absent.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str, seed: i32) -> Result<Self, Error> {
        naming::validate_path(path)?;
        let (path, acls) = (path.to_string(), NodeAcls::new(session, None));
        let session = session.clone();
        Ok(SharedCount { session, path, seed, acls })
    }

    /// The same count, creating its node with `acls` (default: the session's
    /// [`crate::session::AclProvider`]).
    pub fn with_acls(mut self, acls: Acls<'static>) -> Self {
        self.acls = self.acls.given(acls);
        self
    }

    /// The count and its version, read from the server.
    ///
    /// # Errors
    /// [`Error::BadData`] if the node holds other than 4 bytes; [`Error::Closed`] once the
    /// session is closed; fatal ZooKeeper errors as named.
    ///
    /// # Cancellation safety
    /// Safe: at most the seed node is created.
    pub async fn get(&self) -> Result<VersionedCount, Error> {
        loop {
            let client = ops::client(&self.session).await?;
            match client.get_data(&self.path).await {
                Ok((data, stat)) => return versioned(&self.path, &data, stat.version),
                Err(ZkError::NoNode) => self.create_seed(&client).await?,
                Err(e) => ops::pause_or_fail(e, &self.path).await?,
            }
        }
    }

    /// Sets `value` if the node is still at `version`; false if it changed since.
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] if the reply was lost (it may have been applied);
    /// otherwise as [`SharedCount::get`].
    ///
    /// # Cancellation safety
    /// Dropping it after the write was sent leaves the same uncertainty as a lost reply.
    pub async fn try_set_count(&self, value: i32, version: i32) -> Result<bool, Error> {
        self.set(value, Some(version)).await
    }

    /// Sets `value` whatever the version (Curator's `setCount`).
    ///
    /// # Errors
    /// As [`SharedCount::try_set_count`].
    ///
    /// # Cancellation safety
    /// As [`SharedCount::try_set_count`].
    pub async fn set_count(&self, value: i32) -> Result<(), Error> {
        self.set(value, None).await.map(drop)
    }

    /// The count now and after every change, through a data watch (changes between two
    /// deliveries may coalesce; each delivered value has a newer version). The watch runs
    /// until the stream is dropped or the session closes.
    pub fn changes(&self) -> CountChanges {
        let (tx, rx) = mpsc::channel(CHANGE_BUFFER);
        tokio::spawn(watch(self.clone(), tx));
        CountChanges { rx }
    }

    async fn set(&self, value: i32, version: Option<i32>) -> Result<bool, Error> {
        loop {
            let client = ops::client(&self.session).await?;
            match client.set_data(&self.path, &value.to_be_bytes(), version).await {
                Ok(_) => return Ok(true),
                Err(ZkError::BadVersion) => return Ok(false),
                Err(ZkError::NoNode) if version.is_some() => return Ok(false),
                Err(ZkError::NoNode) => self.create_seed(&client).await?,
                Err(e) => ops::write_failed(e, &self.path).await?,
            }
        }
    }

    /// Creates the node with the seed, and its missing parents as containers.
    async fn create_seed(&self, client: &Client) -> Result<(), Error> {
        let seed = self.seed.to_be_bytes();
        match ops::create_in_containers(client, &self.path, &seed, &self.acls).await {
            Ok(()) | Err(ZkError::NodeExists) => Ok(()),
            Err(e) => ops::pause_or_fail(e, &self.path).await,
        }
    }
}

/// Changes of a [`SharedCount`], from [`SharedCount::changes`].
#[derive(Debug)]
pub struct CountChanges {
    rx: mpsc::Receiver<Result<VersionedCount, Error>>,
}

impl CountChanges {
    /// The next value; `None` once the watch has ended (the session closed). A node whose
    /// data is not a count yields [`Error::BadData`] and the watch goes on.
    ///
    /// # Cancellation safety
    /// Safe: a value not yet received stays for the next call.
    pub async fn next(&mut self) -> Option<Result<VersionedCount, Error>> {
        self.rx.recv().await
    }
}

/// Feeds `tx` the count's versions until it is dropped or the session ends.
async fn watch(count: SharedCount, tx: mpsc::Sender<Result<VersionedCount, Error>>) {
    let mut last = None;
    loop {
        let client = tokio::select! {
            biased;
            c = ops::client(&count.session) => match c { Ok(c) => c, Err(_) => return },
            _ = tx.closed() => return,
        };
        let watcher = match client.get_and_watch_data(&count.path).await {
            Ok((data, stat, watcher)) => {
                if last != Some(stat.mzxid) {
                    last = Some(stat.mzxid);
                    if tx.send(versioned(&count.path, &data, stat.version)).await.is_err() {
                        return;
                    }
                }
                watcher
            }
            Err(ZkError::NoNode) => match client.check_and_watch_stat(&count.path).await {
                Ok((None, watcher)) => watcher,
                Ok((Some(_), _)) => continue,
                Err(e) => match ops::pause_or_fail(e, &count.path).await {
                    Ok(()) => continue,
                    Err(_) => return,
                },
            },
            Err(e) => match ops::pause_or_fail(e, &count.path).await {
                Ok(()) => continue,
                Err(_) => return,
            },
        };
        tokio::select! {
            biased;
            event = watcher.changed() => if event.event_type == EventType::Session {
                tokio::time::sleep(ops::RETRY_PAUSE).await;
            },
            _ = tx.closed() => return,
        }
    }
}

/// A count's data with its version: 4 big-endian bytes, anything else refused.
fn versioned(path: &str, data: &[u8], version: i32) -> Result<VersionedCount, Error> {
    match <[u8; INT_BYTES]>::try_from(data) {
        Ok(bytes) => Ok(VersionedCount { value: i32::from_be_bytes(bytes), version }),
        Err(_) => Err(Error::BadData {
            path: path.to_string(),
            reason: format!("a count of {INT_BYTES} big-endian bytes, found {} bytes", data.len()),
        }),
    }
}
