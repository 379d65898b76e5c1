//! Unique, strictly increasing ids from a PERSISTENT_SEQUENTIAL node's sequence number (the
//! ZooKeeper id generator of the persistent-sequential recipe): create `<path>/id-<seq>`, keep
//! the number, delete the node. The parent's `cversion`, which the server numbers children
//! from, keeps counting after the nodes are gone.

use std::ops::Range;

use rzk_client::{Acls, CreateMode};

use crate::session::acl_provider::NodeAcls;
use tokio::sync::OnceCell;

use crate::naming;
use crate::session::ops;
use crate::session::Session;
use crate::zk_error::ZkError;
use crate::Error;

/// The name prefix of an id node.
const ID_PREFIX: &str = "id-";

/// Ids from ZooKeeper sequence numbers, unique and strictly increasing across every client of
/// one path: an id returned before another is requested (by any client) is smaller.
///
/// Each call creates one PERSISTENT_SEQUENTIAL node `<path>/id-<seq>` and deletes it again, so
/// the path does not grow; the path itself is PERSISTENT (a container would be removed when
/// empty, and its counter with it). The path's data records its batch size `B` (decimal
/// ASCII; empty data means 1): a batch is `seq * B .. (seq + 1) * B`, so ranges of one path
/// never overlap and their starts increase like single ids. Every generator of a path must use
/// its batch size; another is refused with [`Error::BadData`].
///
/// ZooKeeper's sequence counter is a signed 32-bit number: a path hands out `2^31` batches,
/// then [`Error::SequenceOverflow`].
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{counter::IdGenerator, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let ids = IdGenerator::new(&session, "/ids/orders")?;
/// let a = ids.next().await?;
/// let b = ids.next().await?;
/// assert!(a < b);
/// let blocks = IdGenerator::with_batch_size(&session, "/ids/blocks", 1000)?;
/// let range = blocks.next_batch().await?; // 1000 ids no other client gets
/// # let _ = range; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct IdGenerator {
    session: Session,
    path: String,
    batch: u64,
    acls: NodeAcls,
    /// Set once the path is known to exist with our batch size.
    checked: std::sync::Arc<OnceCell<()>>,
}

impl IdGenerator {
    /// Single ids (batch size 1) at `path`.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str) -> Result<Self, Error> {
        Self::with_batch_size(session, path, 1)
    }

    /// Ranges of `batch` ids at `path`.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path or a batch size of 0.
    pub fn with_batch_size(session: &Session, path: &str, batch: u64) -> Result<Self, Error> {
        naming::validate_path(path)?;
        if batch == 0 {
            return Err(Error::BadArguments("an id batch size of 0".into()));
        }
        Ok(IdGenerator {
            session: session.clone(),
            path: path.to_string(),
            batch,
            acls: NodeAcls::new(session, None),
            checked: Default::default(),
        })
    }

    /// The same generator, creating its nodes with `acls` (default: the session's
    /// [`crate::session::AclProvider`]).
    pub fn with_acls(mut self, acls: Acls<'static>) -> Self {
        self.acls = self.acls.given(acls);
        self
    }

    /// The batch size.
    pub fn batch_size(&self) -> u64 {
        self.batch
    }

    /// The next id (the start of the next batch when the batch size is not 1).
    ///
    /// # Errors
    /// As [`IdGenerator::next_batch`].
    ///
    /// # Cancellation safety
    /// As [`IdGenerator::next_batch`].
    pub async fn next(&self) -> Result<u64, Error> {
        Ok(self.next_batch().await?.start)
    }

    /// Reserves the next batch: `seq * B .. (seq + 1) * B`.
    ///
    /// # Errors
    /// [`Error::BadData`] if the path records another batch size; [`Error::SequenceOverflow`]
    /// once the path's counter is exhausted; [`Error::Closed`] once the session is closed;
    /// fatal ZooKeeper errors (`NoAuth`, ...) as named. A lost reply is retried: it skips a
    /// number (and may leave its node behind), never repeats one.
    ///
    /// # Cancellation safety
    /// Safe for uniqueness: a dropped call at most skips numbers, and may leave its node.
    pub async fn next_batch(&self) -> Result<Range<u64>, Error> {
        let prefix = naming::child_path(&self.path, ID_PREFIX);
        let acl = self.acls.at(&prefix);
        let options = CreateMode::PersistentSequential.with_acls(acl.acls());
        loop {
            let client = ops::client(&self.session).await?;
            self.checked.get_or_try_init(|| self.ensure_path()).await?;
            match client.create(&prefix, &[], &options).await {
                Ok((_, seq)) => {
                    let node = format!("{prefix}{seq}");
                    let seq = u64::try_from(seq.into_i64())
                        .map_err(|_| Error::SequenceOverflow { path: self.path.clone() })?;
                    // The number is ours whatever happens to the node; a failed delete only
                    // leaves it behind.
                    if let Err(e) = client.delete(&node, None).await {
                        tracing::warn!(node, "could not delete an id node: {e}");
                    }
                    let start = seq * self.batch;
                    return Ok(start..start + self.batch);
                }
                Err(ZkError::NoNode) => self.ensure_path().await?,
                Err(e) => ops::pause_or_fail(e, &prefix).await?,
            }
        }
    }

    /// Creates the path (PERSISTENT, its batch size as data) and checks its batch size. Each
    /// retry takes the session's current client: after an expiry the old one fails every
    /// request, and the session has opened a new one.
    async fn ensure_path(&self) -> Result<(), Error> {
        let acl = self.acls.at(&self.path);
        let persistent = CreateMode::Persistent.with_acls(acl.acls());
        loop {
            let client = &ops::client(&self.session).await?;
            let parent = naming::parent_of(&self.path);
            if parent != "/" {
                match ops::mkdirs(client, parent, CreateMode::Persistent, &self.acls).await {
                    Ok(()) | Err(ZkError::NodeExists) => {}
                    Err(e) => {
                        ops::pause_or_fail(e, parent).await?;
                        continue;
                    }
                }
            }
            let size = self.batch.to_string();
            match client.create(&self.path, size.as_bytes(), &persistent).await {
                Ok(_) => return Ok(()),
                Err(ZkError::NodeExists) => {}
                Err(e) => {
                    ops::pause_or_fail(e, &self.path).await?;
                    continue;
                }
            }
            match client.get_data(&self.path).await {
                Ok((data, _)) => return self.check_batch(&data),
                Err(ZkError::NoNode) => continue,
                Err(e) => ops::pause_or_fail(e, &self.path).await?,
            }
        }
    }

    fn check_batch(&self, data: &[u8]) -> Result<(), Error> {
        let recorded = match data {
            [] => Some(1),
            d => std::str::from_utf8(d).ok().and_then(|s| s.parse::<u64>().ok()),
        };
        if recorded == Some(self.batch) {
            return Ok(());
        }
        Err(Error::BadData {
            path: self.path.clone(),
            reason: format!(
                "an id path of batch size {}, found data {:?}",
                self.batch,
                String::from_utf8_lossy(data)
            ),
        })
    }
}
