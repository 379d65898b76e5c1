//! The discovery-expiry workload: an instance's death to every one of `--participants`
//! service caches updated. A victim session registers an instance through a proxy; once every
//! cache lists it, the proxy closes the victim's connection (as a killed process's socket is
//! closed), so the session ends by expiry, never by a close; the sample is the time from the
//! cut to the last cache that no longer lists it. The part beyond the session timeout is the
//! server's expiry tick plus the caches' notification and read.

use std::time::{Duration, Instant};

use rzk_recipes::discovery::{ServiceCache, ServiceDiscovery, ServiceInstance};
use tokio::task::JoinSet;

use crate::config::{BenchConfig, Strategy, Workload};
use crate::election::session;
use crate::error::BenchError;
use crate::report::ElectionReport;
use rzk_wirekit::proxy::Proxy;

/// The service every cache follows.
const SERVICE: &str = "bench";
/// How long the caches may take to list a new instance before the run fails.
const LIST_LIMIT: Duration = Duration::from_secs(60);

/// The shortest wait between the caches listing the victim and its death.
const PHASE_MIN: Duration = Duration::from_millis(500);

/// A seeded sequence of waits below a bound (a linear congruential generator: reproducible
/// runs, no dependency).
struct Phase(u64);

impl Phase {
    fn next(&mut self, below: Duration) -> Duration {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let ms = u64::try_from(below.as_millis()).unwrap_or(u64::MAX).max(1);
        Duration::from_millis((self.0 >> 33) % ms)
    }
}

/// Runs `--trials` deaths with `--participants` caches, one session each.
pub(crate) async fn expiry(cfg: &BenchConfig, hosts: &str) -> Result<ElectionReport, BenchError> {
    let target: std::net::SocketAddr = hosts
        .split(',')
        .next()
        .and_then(|h| h.parse().ok())
        .ok_or_else(|| BenchError::FailoverTarget(hosts.to_owned()))?;
    let base = format!("/bench-discovery/{}", std::process::id());
    let mut caches = Vec::with_capacity(cfg.participants);
    for _ in 0..cfg.participants.max(1) {
        let s = session(hosts, cfg.session_timeout).await?;
        let cache = ServiceCache::<()>::new(&s, &base, SERVICE)?;
        cache.initialized().await?;
        caches.push((s, cache));
    }
    let mut samples = Vec::new();
    let mut phase = Phase(6);
    let started = Instant::now();
    for t in 0..cfg.trials.max(1) {
        let proxy = Proxy::start(target)?;
        let victim = session(&proxy.hosts(), cfg.session_timeout).await?;
        let id = format!("victim-{t}");
        let d = ServiceDiscovery::<()>::new(&victim, &base)?;
        d.register(&ServiceInstance::new(SERVICE, "10.0.0.1", 8080).with_id(&id)).await?;
        let all: Vec<ServiceCache<()>> = caches.iter().map(|(_, c)| c.clone()).collect();
        tokio::time::timeout(LIST_LIMIT, gone_from_all(&all, &id, false))
            .await
            .map_err(|_| BenchError::stopped("the caches did not list the new instance"))?;
        // A random phase against the client's pings and the server's expiry ticks, as the
        // Curator side sleeps before its kill.
        tokio::time::sleep(PHASE_MIN + phase.next(cfg.session_timeout)).await;
        let cut = Instant::now();
        proxy.cut();
        gone_from_all(&all, &id, true).await;
        samples.push(cut.elapsed().as_micros() as u64);
        drop(d);
        victim.close().await;
    }
    let (participants, seconds) = (caches.len(), started.elapsed().as_secs_f64());
    // Any failed call ends the run with its error instead: no errors to count.
    let strategy = Strategy::Predecessor.name();
    Ok(ElectionReport::timed(
        Workload::DiscoveryExpiry,
        participants,
        strategy,
        seconds,
        samples,
        0,
    ))
}

/// Waits until every cache lists `id` (`gone` false) or none does (`gone` true), each on its
/// own change stream, so that the last one is seen when it happens, not at a poll.
async fn gone_from_all(caches: &[ServiceCache<()>], id: &str, gone: bool) {
    let mut waits = JoinSet::new();
    for cache in caches {
        let (mut sets, id) = (cache.changes(), id.to_string());
        waits.spawn(async move {
            while let Some(set) = sets.next().await {
                let Ok(set) = set else { continue };
                if set.instances.iter().any(|i| i.id == id) != gone {
                    return;
                }
            }
        });
    }
    while waits.join_next().await.is_some() {}
}
