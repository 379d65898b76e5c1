//! Curator's `DistributedAtomicLong`: one node holding a signed 64-bit number as 8 big-endian
//! bytes, updated by optimistic, versioned writes under a bounded retry policy.

use std::time::Duration;

use rzk_client::{Acls, Client, Stat};

use crate::session::acl_provider::NodeAcls;

use crate::naming;
use crate::session::ops;
use crate::session::Session;
use crate::zk_error::ZkError;
use crate::Error;

/// How often an optimistic update is tried, and the pause between tries (doubled after each,
/// up to `max_backoff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, at least 1.
    pub max_attempts: u32,
    /// The pause after the first lost race.
    pub backoff: Duration,
    /// The longest pause.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 20 attempts, from 1 ms up to 100 ms apart.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 20,
            backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(100),
        }
    }
}

impl RetryPolicy {
    /// The pause after lost race `attempt` (1-based).
    pub(crate) fn pause(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.saturating_sub(1)).unwrap_or(u32::MAX);
        self.backoff.saturating_mul(factor).min(self.max_backoff)
    }
}

/// The outcome of an update: the value before and after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicValue {
    /// The value the update replaced.
    pub pre: i64,
    /// The value it wrote.
    pub post: i64,
}

/// A shared counter in Curator's `DistributedAtomicLong` layout: the node's data is the value
/// as 8 big-endian bytes; an absent node or empty data reads as 0. Updates read the value and
/// its version and write with that version, so concurrent updates from any client (Java
/// Curator's included) are linearizable: each applied update saw the value the previous one
/// wrote. An update that loses the race on every attempt of its [`RetryPolicy`] fails with
/// [`Error::RetriesExhausted`] and applied nothing. (Curator's optional promotion to a lock is
/// not offered.)
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{counter::{DistributedAtomicLong, RetryPolicy}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let hits = DistributedAtomicLong::new(&session, "/counters/hits", RetryPolicy::default())?;
/// let v = hits.increment().await?;
/// println!("{} -> {}", v.pre, v.post);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedAtomicLong {
    session: Session,
    path: String,
    retry: RetryPolicy,
    acls: NodeAcls,
}

/// The size of a `DistributedAtomicLong` value.
const LONG_BYTES: usize = 8;

impl DistributedAtomicLong {
    /// A counter at `path` (nothing is created before the first update).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path or a policy of 0 attempts.
    pub fn new(session: &Session, path: &str, retry: RetryPolicy) -> Result<Self, Error> {
        naming::validate_path(path)?;
        if retry.max_attempts == 0 {
            return Err(Error::BadArguments("a retry policy of 0 attempts".into()));
        }
        let (path, acls) = (path.to_string(), NodeAcls::new(session, None));
        let session = session.clone();
        Ok(DistributedAtomicLong { session, path, retry, acls })
    }

    /// The same counter, creating its node with `acls` (default: the session's
    /// [`crate::session::AclProvider`]).
    pub fn with_acls(mut self, acls: Acls<'static>) -> Self {
        self.acls = self.acls.given(acls);
        self
    }

    /// The current value (0 for an absent node).
    ///
    /// # Errors
    /// [`Error::BadData`] if the node holds other than 0 or 8 bytes; [`Error::Closed`] once
    /// the session is closed; fatal ZooKeeper errors as named.
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn get(&self) -> Result<i64, Error> {
        Ok(self.read().await?.1)
    }

    /// Sets `new` if the value is `expected`, in one attempt; `false` if it is not, or if
    /// another write came between (Curator's `compareAndSet`). An absent node is created
    /// when `expected` is 0.
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] if the write's reply was lost (it may have been applied);
    /// otherwise as [`DistributedAtomicLong::get`].
    ///
    /// # Cancellation safety
    /// Dropping it after the write was sent leaves the same uncertainty as a lost reply.
    pub async fn compare_and_set(&self, expected: i64, new: i64) -> Result<bool, Error> {
        let (client, value, stat) = self.read().await?;
        if value != expected {
            return Ok(false);
        }
        self.write(&client, stat.as_ref(), new).await
    }

    /// Sets `new`, retrying lost races under the retry policy (Curator's `trySet`).
    ///
    /// # Errors
    /// [`Error::RetriesExhausted`]; otherwise as [`DistributedAtomicLong::compare_and_set`].
    ///
    /// # Cancellation safety
    /// As [`DistributedAtomicLong::compare_and_set`].
    pub async fn try_set(&self, new: i64) -> Result<AtomicValue, Error> {
        self.update(|_| new).await
    }

    /// Adds `delta` (wrapping, as Java's `long` does), retrying lost races under the policy.
    ///
    /// # Errors
    /// As [`DistributedAtomicLong::try_set`].
    ///
    /// # Cancellation safety
    /// As [`DistributedAtomicLong::compare_and_set`].
    pub async fn add(&self, delta: i64) -> Result<AtomicValue, Error> {
        self.update(|v| v.wrapping_add(delta)).await
    }

    /// Adds 1. As [`DistributedAtomicLong::add`].
    ///
    /// # Errors
    /// As [`DistributedAtomicLong::add`].
    pub async fn increment(&self) -> Result<AtomicValue, Error> {
        self.add(1).await
    }

    /// Subtracts 1. As [`DistributedAtomicLong::add`].
    ///
    /// # Errors
    /// As [`DistributedAtomicLong::add`].
    pub async fn decrement(&self) -> Result<AtomicValue, Error> {
        self.add(-1).await
    }

    async fn update(&self, f: impl Fn(i64) -> i64) -> Result<AtomicValue, Error> {
        for attempt in 1..=self.retry.max_attempts {
            let (client, pre, stat) = self.read().await?;
            let post = f(pre);
            if self.write(&client, stat.as_ref(), post).await? {
                return Ok(AtomicValue { pre, post });
            }
            if attempt < self.retry.max_attempts {
                tokio::time::sleep(self.retry.pause(attempt)).await;
            }
        }
        let attempts = self.retry.max_attempts;
        Err(Error::RetriesExhausted { path: self.path.clone(), attempts })
    }

    /// The value and the node's stat (`None`: absent), with the client that read them,
    /// retrying connection troubles. Each retry takes the session's current client: after an
    /// expiry the old one fails every request, and the session has opened a new one.
    async fn read(&self) -> Result<(Client, i64, Option<Stat>), Error> {
        loop {
            let client = ops::client(&self.session).await?;
            match client.get_data(&self.path).await {
                Ok((data, stat)) => return Ok((client, decode(&self.path, &data)?, Some(stat))),
                Err(ZkError::NoNode) => return Ok((client, 0, None)),
                Err(e) => ops::pause_or_fail(e, &self.path).await?,
            }
        }
    }

    /// Writes `value` over the version read (`None`: creates the node); false if another
    /// write came first.
    async fn write(&self, client: &Client, read: Option<&Stat>, value: i64) -> Result<bool, Error> {
        let data = value.to_be_bytes();
        let result = match read {
            Some(stat) => client.set_data(&self.path, &data, Some(stat.version)).await.map(drop),
            None => ops::create_in_containers(client, &self.path, &data, &self.acls).await,
        };
        match result {
            Ok(()) => Ok(true),
            Err(ZkError::BadVersion | ZkError::NodeExists | ZkError::NoNode) => Ok(false),
            Err(e) => ops::write_failed(e, &self.path).await.map(|()| false),
        }
    }
}

/// A counter's data: empty is 0, 8 bytes are a big-endian `i64`, anything else is refused.
fn decode(path: &str, data: &[u8]) -> Result<i64, Error> {
    match <[u8; LONG_BYTES]>::try_from(data) {
        Ok(bytes) => Ok(i64::from_be_bytes(bytes)),
        Err(_) if data.is_empty() => Ok(0),
        Err(_) => Err(Error::BadData {
            path: path.to_string(),
            reason: format!(
                "a counter of {LONG_BYTES} big-endian bytes, found {} bytes",
                data.len()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_backoff() {
        assert_eq!(decode("/c", &[]), Ok(0));
        assert_eq!(decode("/c", &(-5i64).to_be_bytes()), Ok(-5));
        assert!(matches!(decode("/c", b"12"), Err(Error::BadData { .. })));
        let p = RetryPolicy::default();
        assert_eq!(p.pause(1), Duration::from_millis(1));
        assert_eq!(p.pause(3), Duration::from_millis(4));
        assert_eq!(p.pause(40), Duration::from_millis(100));
    }
}
