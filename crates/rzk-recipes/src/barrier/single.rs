//! Curator's `DistributedBarrier`: the barrier is up while its node exists.

use std::time::{Duration, Instant};

use rzk_client::{Acls, CreateMode};

use crate::session::acl_provider::NodeAcls;

use crate::naming;
use crate::session::ops;
use crate::session::Session;
use crate::zk_error::ZkError;
use crate::Error;

/// A barrier in the layout of Curator's `DistributedBarrier`: it is set while the PERSISTENT
/// node `path` exists (empty data), so Java and Rust processes share one barrier.
///
/// [`set_barrier`](DistributedBarrier::set_barrier) creates the node (its missing parents
/// PERSISTENT, as Curator's `creatingParentsIfNeeded`), [`remove_barrier`](DistributedBarrier::remove_barrier)
/// deletes it, and [`wait_on_barrier`](DistributedBarrier::wait_on_barrier) returns once it
/// is gone, woken by an `exists` watch (no polling). Setting and removing are idempotent, so
/// unlike other writes they are retried after a connection loss. A wait outlives
/// disconnects and session expiries: it checks the node again on the current connection.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{barrier::DistributedBarrier, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let barrier = DistributedBarrier::new(&session, "/deploy/gate")?;
/// barrier.set_barrier().await?;
/// // Elsewhere: workers call `barrier.wait_on_barrier().await?` and block here ...
/// barrier.remove_barrier().await?; // ... until this releases them all.
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DistributedBarrier {
    session: Session,
    path: String,
    acls: NodeAcls,
}

impl std::fmt::Debug for DistributedBarrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedBarrier").field("path", &self.path).finish()
    }
}

impl DistributedBarrier {
    /// A barrier at `path` (nothing is created before [`DistributedBarrier::set_barrier`]).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str) -> Result<Self, Error> {
        naming::validate_path(path)?;
        Ok(DistributedBarrier {
            session: session.clone(),
            path: path.to_string(),
            acls: NodeAcls::new(session, None),
        })
    }

    /// The same barrier, creating its nodes with `acls` (default: the session's
    /// [`crate::session::AclProvider`]).
    pub fn with_acls(self, acls: Acls<'static>) -> Self {
        DistributedBarrier { acls: self.acls.clone().given(acls), ..self }
    }

    /// The barrier path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sets the barrier: creates its node (a node that exists already is fine).
    ///
    /// # Errors
    /// [`Error::Closed`] once the session is closed; `NoAuth`, `NoChildrenForEphemerals` and
    /// other fatal errors as ZooKeeper names them. Connection and session problems are retried.
    ///
    /// # Cancellation safety
    /// Safe: the barrier is then set or not, and setting it again is harmless.
    pub async fn set_barrier(&self) -> Result<(), Error> {
        loop {
            let client = ops::client(&self.session).await?;
            let (mode, parents) = (CreateMode::Persistent, CreateMode::Persistent);
            match ops::create_with_parents(&client, &self.path, &[], mode, parents, &self.acls)
                .await
            {
                Ok(_) | Err(ZkError::NodeExists) => return Ok(()),
                Err(e) => ops::pause_or_fail(e, &self.path).await?,
            }
        }
    }

    /// Removes the barrier: deletes its node (a missing node is fine), releasing every waiter.
    ///
    /// # Errors
    /// [`Error::NotEmpty`] if the node has children; [`Error::Closed`] once the session is
    /// closed; `NoAuth` and other fatal errors as ZooKeeper names them. Connection and session
    /// problems are retried.
    ///
    /// # Cancellation safety
    /// Safe: the barrier is then removed or not, and removing it again is harmless.
    pub async fn remove_barrier(&self) -> Result<(), Error> {
        loop {
            let client = ops::client(&self.session).await?;
            match client.delete(&self.path, None).await {
                Ok(()) | Err(ZkError::NoNode) => return Ok(()),
                Err(e) => ops::pause_or_fail(e, &self.path).await?,
            }
        }
    }

    /// Waits until the barrier is removed (returns at once if it is not set).
    ///
    /// # Errors
    /// [`Error::Closed`] once the session is closed; `NoAuth` and other fatal errors as
    /// ZooKeeper names them. Disconnects and session expiries are waited out.
    ///
    /// # Cancellation safety
    /// Safe: it only reads and watches.
    pub async fn wait_on_barrier(&self) -> Result<(), Error> {
        self.wait_until(None).await.map(drop)
    }

    /// [`DistributedBarrier::wait_on_barrier`], giving up after `timeout`: true if the barrier
    /// is gone, false if the time ran out first (Curator's `waitOnBarrier(maxWait, unit)`).
    ///
    /// # Errors
    /// As [`DistributedBarrier::wait_on_barrier`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads and watches.
    pub async fn wait_on_barrier_timeout(&self, timeout: Duration) -> Result<bool, Error> {
        ops::bounded(timeout, |deadline| self.wait_until(deadline)).await
    }

    async fn wait_until(&self, deadline: Option<Instant>) -> Result<bool, Error> {
        loop {
            let mut states = self.session.subscribe();
            let client = ops::client(&self.session).await?;
            states.borrow_and_update();
            match client.check_and_watch_stat(&self.path).await {
                Ok((None, _)) => return Ok(true),
                Ok((Some(_), watcher)) => {
                    if !ops::woken_before(watcher, &mut states, deadline).await {
                        return Ok(false);
                    }
                }
                Err(e) => ops::pause_or_fail(e, &self.path).await?,
            }
        }
    }
}
