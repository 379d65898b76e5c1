//! Scenario 6: one configuration node, watched by every instance of a service through a
//! NodeCache; one versioned write reaches them all.

use std::time::{Duration, Instant};

use anyhow::bail;
use rzk_client::{Acls, CreateMode};
use rzk_recipes::cache::NodeCache;

use super::stage::{until, Kept, Stage};

/// The configuration node.
const CONFIG_PATH: &str = "/demo/config/app";

/// The instances watching it.
const WATCHERS: usize = 5;

/// How long the change may take to reach every watcher.
const REACH_WITHIN: Duration = Duration::from_secs(10);

/// Plays the change; how long it took to reach the last watcher.
pub(super) async fn play(stage: &Stage, kept: &mut Kept) -> anyhow::Result<Duration> {
    println!("\n== 6. {WATCHERS} instances watch {CONFIG_PATH}; one change reaches them all");
    let writer = stage.session().await?;
    let client = writer.client()?;
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.mkdir("/demo/config", &open).await?;
    client.create(CONFIG_PATH, br#"{"pool": 4}"#, &open).await?;
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let s = stage.session().await?;
        let cache = NodeCache::new(&s, CONFIG_PATH)?;
        cache.initialized().await?;
        watchers.push((s, cache));
    }
    stage.log(format_args!("{WATCHERS} watchers read version 0: {{\"pool\": 4}}"));
    let written = Instant::now();
    let stat = client.set_data(CONFIG_PATH, br#"{"pool": 8}"#, Some(0)).await?;
    stage.log(format_args!("set {{\"pool\": 8}} at version 0: now version {}", stat.version));
    let seen = |c: &NodeCache| c.current().is_some_and(|n| n.version() == stat.version);
    let Some(_) = until(REACH_WITHIN, || watchers.iter().all(|(_, c)| seen(c))).await else {
        bail!("the change did not reach every watcher within {REACH_WITHIN:?}");
    };
    let took = written.elapsed();
    stage.log(format_args!(
        "every watcher has version {} after {:.2} ms",
        stat.version,
        took.as_secs_f64() * 1e3
    ));
    kept.keep((writer, watchers));
    Ok(took)
}
