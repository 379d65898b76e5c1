//! Waiting with a deadline: a test that would hang fails instead, naming what it waited for.

use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

/// How often `eventually` evaluates its condition.
pub const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// Runs `f` to completion, or panics naming `what` once `limit` has passed.
pub async fn within<T>(limit: Duration, what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, f).await.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// Waits until `f` holds, polling every `POLL_INTERVAL`, or panics with `what` after
/// `limit`. Returns how long it took.
pub async fn eventually(limit: Duration, what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if f() {
            return start.elapsed();
        }
        if start.elapsed() > limit {
            panic!("timed out after {limit:?} waiting for: {what}");
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// How long [`first_connect`] tries again a first connection that timed out.
pub const FIRST_CONNECT_PATIENCE: Duration = Duration::from_secs(60);

/// A new session's first connection, made again while it times out, for up to
/// [`FIRST_CONNECT_PATIENCE`]. Some clients (zookeeper-client among them) bound a session's
/// whole establishment by its session timeout, and a test's short timeout is about the
/// session, not about how soon a machine running every suite at once completes a handshake.
/// Panics naming any other error, and a timeout after the patience.
pub async fn first_connect<T, E: Display, F: Future<Output = Result<T, E>>>(
    mut connect: impl FnMut() -> F,
    is_timeout: impl Fn(&E) -> bool,
) -> T {
    let patience = Instant::now() + FIRST_CONNECT_PATIENCE;
    loop {
        match connect().await {
            Ok(connected) => return connected,
            Err(e) if is_timeout(&e) && Instant::now() < patience => {}
            Err(e) => panic!("first connect: {e}"),
        }
    }
}

/// The most state changes [`resumed`] accepts: Disconnected, then SyncConnected, with room for
/// one more pair should the first connection after a restart land while the server is still
/// loading. A reconnect storm makes hundreds.
pub const RESUME_STATE_CHANGES_MAX: usize = 4;

/// Waits until a session whose server was restarted is connected again, and returns the state
/// changes on the way (Disconnected, then SyncConnected, if all goes well). Panics naming the
/// changes once there are more than [`RESUME_STATE_CHANGES_MAX`], or when `limit` passes
/// before one of them.
pub async fn resumed(
    states: &mut rzk_client::StateWatcher,
    limit: Duration,
) -> Vec<rzk_client::SessionState> {
    let mut changes = Vec::new();
    while changes.last() != Some(&rzk_client::SessionState::SyncConnected) {
        changes.push(within(limit, "the session resumed", states.changed()).await);
        assert!(changes.len() <= RESUME_STATE_CHANGES_MAX, "a reconnect storm: {changes:?}");
    }
    changes
}
