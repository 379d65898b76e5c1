//! The plain recipes' (queue, ids, counters) way to run ZooKeeper operations on the session's
//! current client: wait for a connection, pause and retry what a retry can cure, fail on the
//! rest. Writes whose outcome a connection loss makes unknown are never retried here: the
//! caller reports [`Error::ConnectionLoss`].

use std::time::Duration;

use rzk_client::{Client, CreateMode};

use crate::naming;
use crate::session::acl_provider::NodeAcls;
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
    acls: &NodeAcls,
) -> Result<(), ZkError> {
    create_with_parents(client, path, data, CreateMode::Persistent, CreateMode::Container, acls)
        .await
        .map(drop)
}

/// Creates `path` with `data` in `mode`, its missing parents in `parents` mode (Curator's
/// `creatingParentsIfNeeded` for PERSISTENT, `creatingParentContainersIfNeeded` for CONTAINER);
/// returns the path created (with its sequence number for a sequential `mode`) and its stat.
/// Each node gets the ACL `acls` names for its own path.
pub(crate) async fn create_with_parents(
    client: &Client,
    path: &str,
    data: &[u8],
    mode: CreateMode,
    parents: CreateMode,
    acls: &NodeAcls,
) -> Result<(String, rzk_client::Stat), ZkError> {
    let acl = acls.at(path);
    let options = mode.with_acls(acl.acls());
    let created = match client.create(path, data, &options).await {
        Err(ZkError::NoNode) => {
            mkdirs(client, naming::parent_of(path), parents, acls).await?;
            client.create(path, data, &options).await
        }
        other => other,
    };
    let (stat, sequence) = created?;
    let sequential =
        matches!(mode, CreateMode::PersistentSequential | CreateMode::EphemeralSequential);
    let created_path = if sequential { format!("{path}{sequence}") } else { path.to_string() };
    Ok((created_path, stat))
}

/// Creates `path` and its missing ancestors in `mode` (persistent or container), each with
/// the ACL `acls` names for its own path, as Curator's `ZKPaths.mkdirs` asks its ACL provider
/// for each: up from `path` to the first that exists, then down. One that another client
/// creates meanwhile counts as made.
pub(crate) async fn mkdirs(
    client: &Client,
    path: &str,
    mode: CreateMode,
    acls: &NodeAcls,
) -> Result<(), ZkError> {
    let create = |p: &str| {
        let acl = acls.at(p);
        client.create(p, &[], &mode.with_acls(acl.acls()))
    };
    let mut missing: Vec<&str> = Vec::new();
    let mut at = path;
    loop {
        match create(at).await {
            Ok(_) | Err(ZkError::NodeExists) => break,
            Err(ZkError::NoNode) if at != "/" => {
                missing.push(at);
                at = naming::parent_of(at);
            }
            Err(e) => return Err(e),
        }
    }
    while let Some(p) = missing.pop() {
        match create(p).await {
            Ok(_) | Err(ZkError::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The session's state, subscribed before an operation whose watch [`woken_before`] awaits.
pub(crate) type StateWatch = tokio::sync::watch::Receiver<crate::session::Snapshot>;

/// Waits for `watcher`, or for any change of the session's state (a disconnect, a new
/// session: the caller checks again on the current client, so no wait is lost with a
/// connection or a session); false if `deadline` passed first.
pub(crate) async fn woken_before(
    watcher: rzk_client::OneshotWatcher,
    states: &mut StateWatch,
    deadline: Option<std::time::Instant>,
) -> bool {
    tokio::select! {
        biased;
        _ = watcher.changed() => true,
        _ = states.changed() => true,
        _ = crate::session::sleep_until(deadline) => false,
    }
}

/// Runs the wait `f(deadline)` bounded by `timeout` (the waits for a connection included):
/// its result, or `Ok(false)` once the time ran out (the wait is then dropped).
pub(crate) async fn bounded<F, W>(timeout: Duration, f: F) -> Result<bool, Error>
where
    F: FnOnce(Option<std::time::Instant>) -> W,
    W: std::future::Future<Output = Result<bool, Error>>,
{
    let deadline = crate::clock::now() + timeout;
    tokio::time::timeout_at(deadline.into(), f(Some(deadline))).await.unwrap_or(Ok(false))
}
