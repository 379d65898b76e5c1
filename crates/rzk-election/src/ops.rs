//! The plain recipes' (queue, ids, counters) way to run ZooKeeper operations on the session's
//! current client: wait for a connection, pause and retry what a retry can cure, fail on the
//! rest. Writes whose outcome a connection loss makes unknown are never retried here: the
//! caller reports [`Error::ConnectionLoss`].

use std::time::Duration;

use zookeeper_client::Client;

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
