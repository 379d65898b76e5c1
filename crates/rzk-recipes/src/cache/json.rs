//! [`JsonNodeCache`]: a [`NodeCache`] whose data is one JSON value of a serde type.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use rzk_client::Stat;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::event::CachedNode;
use super::node::{NodeCache, NodeChanges};
use crate::session::Session;
use crate::Error;

/// A decoded value and the stat of the node it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned<T> {
    /// The value.
    pub value: T,
    /// The node's stat (`version` for a versioned write).
    pub stat: Stat,
}

/// A [`NodeCache`] holding one JSON value of type `T`. A node whose data is not a `T` in JSON
/// (written by another client) is reported as [`Error::BadData`], never a panic, and the cache
/// goes on to the next change.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{cache::JsonNodeCache, session::{Session, SessionConfig}};
///
/// #[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default)]
/// struct Database { url: String, pool: u32 }
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let config: JsonNodeCache<Database> = JsonNodeCache::new(&session, "/config/database")?;
/// config.update(|old| Database { pool: old.unwrap_or_default().pool + 1, ..Default::default() })
///     .await?;
/// let mut changes = config.changes();
/// while let Some(change) = changes.next().await {
///     match change {
///         Ok(Some(db)) => println!("v{}: {:?}", db.stat.version, db.value),
///         Ok(None) => println!("no config"),
///         Err(e) => eprintln!("ignored: {e}"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct JsonNodeCache<T> {
    node: NodeCache,
    _value: PhantomData<fn() -> T>,
}

impl<T: Serialize + DeserializeOwned> JsonNodeCache<T> {
    /// Starts caching the node at `path`.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(session: &Session, path: &str) -> Result<Self, Error> {
        Ok(JsonNodeCache::from_node(NodeCache::new(session, path)?))
    }

    /// A typed view of `node`.
    pub fn from_node(node: NodeCache) -> Self {
        JsonNodeCache { node, _value: PhantomData }
    }

    /// The untyped cache.
    pub fn node(&self) -> &NodeCache {
        &self.node
    }

    /// The value as last read: `None` if absent (or not loaded yet).
    ///
    /// # Errors
    /// [`Error::BadData`] if the node's data is not a `T` in JSON.
    pub fn current(&self) -> Result<Option<Versioned<T>>, Error> {
        self.node.current().map(|n| decode(self.node.path(), &n)).transpose()
    }

    /// As [`NodeCache::changes`], decoded.
    pub fn changes(&self) -> JsonChanges<T> {
        JsonChanges {
            inner: self.node.changes(),
            path: self.node.path().to_string(),
            _value: PhantomData,
        }
    }

    /// Writes `value` if the node is at `version` (`None`: whatever its version).
    ///
    /// # Errors
    /// As [`NodeCache::set`]; [`Error::BadArguments`] if `value` cannot be serialized.
    ///
    /// # Cancellation safety
    /// As [`NodeCache::set`].
    pub async fn set(&self, value: &T, version: Option<i32>) -> Result<Stat, Error> {
        let data = encode(value)?;
        Ok(self.node.set(&data, version).await?.stat)
    }

    /// Replaces the value with `f(current)` as a compare-and-set loop (see
    /// [`NodeCache::update`]); returns what was written.
    ///
    /// # Errors
    /// As [`NodeCache::update`]; [`Error::BadData`] if the node holds other than a `T` (it
    /// is not overwritten); [`Error::BadArguments`] if the new value cannot be serialized.
    ///
    /// # Cancellation safety
    /// As [`NodeCache::set`].
    pub async fn update(&self, mut f: impl FnMut(Option<T>) -> T) -> Result<Versioned<T>, Error> {
        let path = self.node.path().to_string();
        let written = self
            .node
            .try_update(|old| {
                let old = old.map(|n| decode::<T>(&path, n)).transpose()?;
                encode(&f(old.map(|v| v.value)))
            })
            .await?;
        decode(&path, &written)
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(value).map_err(|e| Error::BadArguments(format!("not serializable: {e}")))
}

fn decode<T: DeserializeOwned>(path: &str, node: &CachedNode) -> Result<Versioned<T>, Error> {
    match serde_json::from_slice(&node.data) {
        Ok(value) => Ok(Versioned { value, stat: node.stat }),
        Err(e) => Err(Error::BadData {
            path: path.to_string(),
            reason: format!("not the JSON expected: {e}"),
        }),
    }
}

/// The decoded changes of a [`JsonNodeCache`].
#[derive(Debug)]
pub struct JsonChanges<T> {
    inner: NodeChanges,
    path: String,
    _value: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> JsonChanges<T> {
    /// The next state, decoded.
    ///
    /// # Errors
    /// [`Error::BadData`] for a state that is not a `T` in JSON; otherwise as
    /// [`NodeChanges::next`]. An error item is not the end of the stream.
    ///
    /// # Cancellation safety
    /// Safe: no state is lost if the future is dropped.
    pub async fn next(&mut self) -> Option<Result<Option<Versioned<T>>, Error>> {
        let item = self.inner.next().await?;
        Some(self.decoded(item))
    }

    fn decoded(
        &self,
        item: Result<Option<CachedNode>, Error>,
    ) -> Result<Option<Versioned<T>>, Error> {
        item?.map(|n| decode(&self.path, &n)).transpose()
    }
}

impl<T: DeserializeOwned> Stream for JsonChanges<T> {
    type Item = Result<Option<Versioned<T>>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(item)) => Poll::Ready(Some(self.decoded(item))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
