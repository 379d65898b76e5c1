//! Scenario 7: two instances of a service registered in a curator-x-discovery registry, and
//! clients that each keep a ServiceCache of it; one instance goes offline and leaves every
//! client's list.

use std::time::{Duration, Instant};

use anyhow::bail;
use rzk_recipes::discovery::{ServiceCache, ServiceDiscovery, ServiceInstance};

use super::stage::{until, Kept, Stage};

/// The registry's base path.
const BASE: &str = "/demo/services";

/// The clients keeping a live list.
const CLIENTS: usize = 3;

/// How long the registry may take to reach every client.
const REACH_WITHIN: Duration = Duration::from_secs(10);

type Registry = ServiceDiscovery<serde_json::Value>;
type Cache = ServiceCache<serde_json::Value>;

/// Plays the departure; how long it took to leave the last client's list.
pub(super) async fn play(stage: &Stage, kept: &mut Kept) -> anyhow::Result<Duration> {
    println!("\n== 7. an instance of `web` goes offline and leaves every client's list");
    let mut instances = Vec::new();
    for (id, port) in [("web-1", 8080), ("web-2", 8081)] {
        let s = stage.session().await?;
        let registry = Registry::new(&s, BASE)?;
        registry.register(&ServiceInstance::new("web", "10.0.0.7", port).with_id(id)).await?;
        stage.log(format_args!("{id} registered at 10.0.0.7:{port}"));
        instances.push((s, registry));
    }
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let s = stage.session().await?;
        let cache = Cache::new(&s, BASE, "web")?;
        cache.initialized().await?;
        clients.push((s, cache));
    }
    let listing = |n: usize| move |c: &(_, Cache)| c.1.instances().len() == n;
    if until(REACH_WITHIN, || clients.iter().all(listing(2))).await.is_none() {
        bail!("not every client listed both instances within {REACH_WITHIN:?}");
    }
    stage.log(format_args!("{CLIENTS} clients list web-1 and web-2"));
    let (session, registry) = instances.pop().expect("two instances");
    let left = Instant::now();
    registry.close().await?;
    session.close().await;
    stage.log("web-2 goes offline (unregisters, its session closes)");
    if until(REACH_WITHIN, || clients.iter().all(listing(1))).await.is_none() {
        bail!("web-2 did not leave every client's list within {REACH_WITHIN:?}");
    }
    let took = left.elapsed();
    stage.log(format_args!(
        "every client lists web-1 alone after {:.2} ms",
        took.as_secs_f64() * 1e3
    ));
    kept.keep((instances, clients));
    Ok(took)
}
