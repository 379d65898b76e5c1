//! curator-x-discovery's `ServiceCache`: the instances of one service held in memory and kept
//! equal to the server, with a stream of the instance set after each change.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;

use super::instance::{validate_segment, ServiceInstance};
use super::live::{Decoded, LiveChanges, LiveSet};
use super::service_discovery::Instances;
use crate::naming;
use crate::session::Session;
use crate::Error;

/// The instance sets of a [`ServiceCache`], one after each change.
pub type ServiceChanges<T> = LiveChanges<ServiceInstance<T>, Instances<T>>;

/// The instances of one service, cached (curator-x-discovery's `ServiceCache`): the children
/// of `<basePath>/<name>` on a [`TreeCache`](crate::cache::TreeCache) one level deep, so it has the
/// tree cache's guarantees: it converges after disconnects, session expiry, server restarts
/// and the service node deleted and created again, and reads nothing per query.
///
/// A node whose data is not an instance (malformed JSON from another client) is skipped: it is
/// logged once per state at `warn`, and listed in [`Instances::malformed`] of every set it is
/// part of, so the instances around it are still served.
///
/// Cheap to clone; the cache stops when [`ServiceCache::close`] is called, the last clone is
/// dropped, or its session closes.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{discovery::ServiceCache, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let cache = ServiceCache::<serde_json::Value>::new(&session, "/services", "api")?;
/// let mut sets = cache.changes();
/// while let Some(set) = sets.next().await {
///     let ids: Vec<String> = set?.instances.into_iter().map(|i| i.id).collect();
///     println!("api is now {ids:?}");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ServiceCache<T> {
    live: LiveSet,
    name: String,
    _payload: PhantomData<fn() -> T>,
}

impl<T> Clone for ServiceCache<T> {
    fn clone(&self) -> Self {
        ServiceCache { live: self.live.clone(), name: self.name.clone(), _payload: PhantomData }
    }
}

impl<T: DeserializeOwned> ServiceCache<T> {
    /// Starts caching the instances of `name` under `base_path` (in the background, on the
    /// current tokio runtime). Nothing is written; the service may not exist yet.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad base path or a name that is not one path segment.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(session: &Session, base_path: &str, name: &str) -> Result<Self, Error> {
        naming::validate_path(base_path)?;
        validate_segment("service name", name)?;
        let live = LiveSet::new(session, &naming::child_path(base_path, name))?;
        Ok(ServiceCache { live, name: name.to_string(), _payload: PhantomData })
    }

    /// The service name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cached instances, by id (empty before the first load).
    pub fn instances(&self) -> Vec<ServiceInstance<T>> {
        self.instances_reporting().instances
    }

    /// [`ServiceCache::instances`], with the nodes it skipped.
    pub fn instances_reporting(&self) -> Instances<T> {
        Instances::from(self.live.current(decode::<T>))
    }

    /// The instance set once the cache is loaded, then after every change of it (a burst of
    /// changes already arrived is one set; a set is never sent twice in a row).
    pub fn changes(&self) -> ServiceChanges<T> {
        self.live.changes(decode::<T>)
    }

    /// Waits for the first complete load.
    ///
    /// # Errors
    /// As [`TreeCache::initialized`](crate::cache::TreeCache::initialized).
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<(), Error> {
        self.live.cache().initialized().await
    }

    /// Stops the cache: its streams end, its instances stay as they were.
    pub fn close(&self) {
        self.live.cache().close();
    }
}

fn decode<T: DeserializeOwned>(_name: &str, data: &[u8]) -> Result<ServiceInstance<T>, String> {
    ServiceInstance::from_json(data)
}

impl<T> From<Decoded<ServiceInstance<T>>> for Instances<T> {
    fn from(d: Decoded<ServiceInstance<T>>) -> Self {
        Instances { instances: d.items, malformed: d.malformed }
    }
}
