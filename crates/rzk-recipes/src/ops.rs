//! The plain recipes' (queue, ids, counters) way to run ZooKeeper operations on the session's
//! current client: wait for a connection, pause and retry what a retry can cure, fail on the
//! rest. Writes whose outcome a connection loss makes unknown are never retried here: the
//! caller reports [`Error::ConnectionLoss`].

use std::time::Duration;

use zookeeper_client::{Acls, Client, CreateMode};

use crate::naming;
use crate::session::Session;
use crate::zk_error::{classify, Class, ZkError};
use crate::Error;

/// The pause before retrying an operation that failed on a connection or session problem.
pub(crate) const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// The current client once the session is connected.
///
/// # Errors
/// [`Error::Closed`] once the session is closed or failed.
pub(crate) async fn client(session: &Session) -> Result<Client, Error> {
    let mut snap = session.subscribe();
    let s = snap
        .wait_for(|s| (s.client.is_some() && s.state.is_connected()) || s.state.is_terminal())
        .await
        .map_err(|_| Error::Closed)?;
    s.client.clone().filter(|_| !s.state.is_terminal()).ok_or(Error::Closed)
}

/// After a failed operation that changed nothing: `Ok` (after [`RETRY_PAUSE`]) when a retry
/// may cure it, the error otherwise.
pub(crate) async fn pause_or_fail(e: ZkError, path: &str) -> Result<(), Error> {
    match classify(&e) {
        Class::ConnectionLoss | Class::SessionEnd | Class::Transient => {
            tokio::time::sleep(RETRY_PAUSE).await;
            Ok(())
        }
        Class::NoNode | Class::Fatal => Err(Error::from_zk(e, path)),
    }
}

/// After a failed write: a connection loss leaves its outcome unknown and is reported;
/// otherwise as [`pause_or_fail`].
pub(crate) async fn write_failed(e: ZkError, path: &str) -> Result<(), Error> {
    match classify(&e) {
        Class::ConnectionLoss => Err(Error::ConnectionLoss),
        _ => pause_or_fail(e, path).await,
    }
}

/// Creates the PERSISTENT node `path` with `data`, its missing parents as containers
/// (Curator's `creatingParentContainersIfNeeded`, so an unused parent is reaped).
pub(crate) async fn create_in_containers(
    client: &Client,
    path: &str,
    data: &[u8],
    acls: Acls<'_>,
) -> Result<(), ZkError> {
    let persistent = CreateMode::Persistent.with_acls(acls);
    match client.create(path, data, &persistent).await {
        Err(ZkError::NoNode) => {
            let containers = CreateMode::Container.with_acls(acls);
            match client.mkdir(naming::parent_of(path), &containers).await {
                Ok(()) | Err(ZkError::NodeExists) => {}
                Err(e) => return Err(e),
            }
            client.create(path, data, &persistent).await.map(drop)
        }
        other => other.map(drop),
    }
}
