//! Picking one instance of a service (curator-x-discovery's `ServiceProvider` and its
//! `ProviderStrategy`s), with instances that failed too often set aside for a while (its
//! `DownInstancePolicy`).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::instance::ServiceInstance;
use super::service_cache::ServiceCache;
use super::service_discovery::ServiceDiscovery;
use crate::Error;

/// Chooses one instance from a list (curator-x-discovery's `ProviderStrategy`).
pub trait ProviderStrategy<T>: Send + Sync {
    /// One of `instances`, or `None` when it is empty.
    fn get_instance<'a>(
        &self,
        instances: &'a [ServiceInstance<T>],
    ) -> Option<&'a ServiceInstance<T>>;
}

/// Each instance in turn (Curator's `RoundRobinStrategy`, the default).
#[derive(Debug, Default)]
pub struct RoundRobin {
    next: AtomicUsize,
}

impl<T> ProviderStrategy<T> for RoundRobin {
    fn get_instance<'a>(
        &self,
        instances: &'a [ServiceInstance<T>],
    ) -> Option<&'a ServiceInstance<T>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        instances.get(n.checked_rem(instances.len())?)
    }
}

/// A uniformly random instance (Curator's `RandomStrategy`).
#[derive(Debug, Default)]
pub struct Random;

impl<T> ProviderStrategy<T> for Random {
    fn get_instance<'a>(
        &self,
        instances: &'a [ServiceInstance<T>],
    ) -> Option<&'a ServiceInstance<T>> {
        // std's random hash keys are the only randomness needed here.
        let r = std::collections::hash_map::RandomState::new().build_hasher().finish();
        let i = r.checked_rem(instances.len() as u64)?;
        instances.get(usize::try_from(i).ok()?)
    }
}

/// When an instance counts as down (Curator's `DownInstancePolicy`): after `error_threshold`
/// reported errors, for `timeout` after the last one.
#[derive(Debug, Clone, Copy)]
pub struct DownInstancePolicy {
    /// How long an instance stays down after its last error.
    pub timeout: Duration,
    /// Errors before an instance counts as down.
    pub error_threshold: u32,
}

impl Default for DownInstancePolicy {
    /// Curator's defaults: 30 s, 2 errors.
    fn default() -> Self {
        DownInstancePolicy { timeout: Duration::from_secs(30), error_threshold: 2 }
    }
}

/// Hands out instances of one service by a strategy, leaving out disabled instances and the
/// ones [`note_error`](ServiceProvider::note_error) marked down. Made by
/// [`ServiceProvider::new`], each call reads the current instances from the server; made by
/// [`ServiceProvider::from_cache`], it picks from a [`ServiceCache`] and reads nothing.
pub struct ServiceProvider<'d, T> {
    source: Source<'d, T>,
    name: String,
    strategy: Box<dyn ProviderStrategy<T>>,
    policy: DownInstancePolicy,
    /// Instance id to (errors, time of the last).
    errors: Mutex<HashMap<String, (u32, Instant)>>,
}

impl<T> std::fmt::Debug for ServiceProvider<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceProvider").field("name", &self.name).finish()
    }
}

/// Where a provider finds the instances.
enum Source<'d, T> {
    /// A query per call.
    Query(&'d ServiceDiscovery<T>),
    /// The cache's current set.
    Cache(ServiceCache<T>),
}

impl<T: DeserializeOwned> ServiceProvider<'static, T> {
    /// A round-robin provider of the instances `cache` holds, with Curator's default down
    /// policy (curator-x-discovery's provider on its `ServiceCache`): no read per pick.
    pub fn from_cache(cache: ServiceCache<T>) -> Self {
        let name = cache.name().to_string();
        Self::with_source(Source::Cache(cache), name)
    }
}

impl<'d, T: DeserializeOwned> ServiceProvider<'d, T> {
    fn with_source(source: Source<'d, T>, name: String) -> Self {
        ServiceProvider {
            source,
            name,
            strategy: Box::new(RoundRobin::default()),
            policy: DownInstancePolicy::default(),
            errors: Mutex::default(),
        }
    }
}

impl<'d, T: Serialize + DeserializeOwned> ServiceProvider<'d, T> {
    /// A round-robin provider of `name`'s instances, with Curator's default down policy.
    pub fn new(discovery: &'d ServiceDiscovery<T>, name: &str) -> Self {
        Self::with_source(Source::Query(discovery), name.to_string())
    }

    /// The same provider choosing by `strategy`.
    pub fn with_strategy(mut self, strategy: impl ProviderStrategy<T> + 'static) -> Self {
        self.strategy = Box::new(strategy);
        self
    }

    /// The same provider with `policy` for down instances.
    pub fn with_down_policy(mut self, policy: DownInstancePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The usable instances: enabled and not down.
    ///
    /// # Errors
    /// As [`ServiceDiscovery::query_for_instances`]; none on a cache.
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn get_all_instances(&self) -> Result<Vec<ServiceInstance<T>>, Error> {
        let mut all = match &self.source {
            Source::Query(discovery) => discovery.query_for_instances(&self.name).await?,
            Source::Cache(cache) => cache.instances(),
        };
        let mut errors = self.errors.lock().expect("poisoned");
        errors.retain(|_, (_, last)| crate::clock::since(*last) < self.policy.timeout);
        all.retain(|i| {
            i.enabled && errors.get(&i.id).is_none_or(|(n, _)| *n < self.policy.error_threshold)
        });
        Ok(all)
    }

    /// One usable instance by the strategy, or `None`.
    ///
    /// # Errors
    /// As [`ServiceDiscovery::query_for_instances`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn get_instance(&self) -> Result<Option<ServiceInstance<T>>, Error> {
        let all = self.get_all_instances().await?;
        let chosen = self.strategy.get_instance(&all).map(|i| i.id.clone());
        Ok(chosen.and_then(|id| all.into_iter().find(|i| i.id == id)))
    }

    /// Reports that `instance` failed: after the policy's threshold it is left out until the
    /// policy's timeout has passed since its last error.
    pub fn note_error(&self, instance: &ServiceInstance<T>) {
        let mut errors = self.errors.lock().expect("poisoned");
        let e = errors.entry(instance.id.clone()).or_insert((0, crate::clock::now()));
        *e = (e.0.saturating_add(1), crate::clock::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> Vec<ServiceInstance<()>> {
        ["a", "b", "c"].iter().map(|id| ServiceInstance::new("s", "h", 1).with_id(id)).collect()
    }

    #[test]
    fn round_robin_cycles() {
        let s = RoundRobin::default();
        let list = three();
        let ids: Vec<&str> = (0..4).map(|_| s.get_instance(&list).unwrap().id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "a"]);
        assert!(ProviderStrategy::<()>::get_instance(&s, &[]).is_none());
    }

    #[test]
    fn random_reaches_every_instance() {
        let list = three();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            seen.insert(Random.get_instance(&list).unwrap().id.clone());
        }
        assert_eq!(seen.len(), 3);
        assert!(ProviderStrategy::<()>::get_instance(&Random, &[]).is_none());
    }
}
