//! config-propagation: seed 002's configuration node watched by `--watchers` caches
//! (rzk-recipes' `NodeCache`, on `--participant-sessions` sessions, one each by default), one
//! setData at a time from a raw session of its own. Per write, the latency from its send to
//! each cache's update seen by the cache's subscriber, and to the last cache's; the next write
//! waits for every cache and then `--gap-ms`, so that writes never overlap.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use rzk_proto::Request;
use rzk_recipes::{cache::NodeCache, session::Session};

use crate::config::BenchConfig;
use crate::conn::{call, connect, create};
use crate::error::BenchError;
use crate::fanout::Progress;
use crate::report::PropagationReport;
use crate::throughput::{session, WARMUP};
use rzk_wirekit::stats::micros;

/// The parent of the benchmark's config nodes.
const PARENT: &str = "/bench-config";

/// The updates of the caches: when each cache saw which version, and how many did.
struct Updates {
    progress: Progress,
    seen: Mutex<Vec<(i32, Instant)>>,
}

impl Updates {
    fn record(&self, version: i32) {
        let at = Instant::now();
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).push((version, at));
        self.progress.add(&self.progress.notified);
    }

    /// The latencies since `sent` of the updates to `version`, taken out.
    fn take(&self, version: i32, sent: Instant) -> Vec<u64> {
        let seen = std::mem::take(&mut *self.seen.lock().unwrap_or_else(|e| e.into_inner()));
        let seen = seen.into_iter().filter(|&(v, _)| v == version);
        seen.map(|(_, at)| u64::from(micros(at.saturating_duration_since(sent)))).collect()
    }
}

/// Runs the workload: warm-up writes for [`WARMUP`], then writes for `cfg.duration`.
pub(crate) async fn run(cfg: &BenchConfig, hosts: &str) -> Result<PropagationReport, BenchError> {
    let caches = usize::try_from(cfg.watchers).unwrap_or(usize::MAX);
    let nsessions = cfg.participant_sessions.unwrap_or(caches).clamp(1, caches);
    let path = format!("{PARENT}/c{}", std::process::id());
    let mut writer = connect(hosts).await?;
    call(&mut writer, &create(PARENT.into(), vec![], 0)).await?;
    call(&mut writer, &create(path.clone(), b"0".to_vec(), 0)).await?;
    let updates =
        Arc::new(Updates { progress: Progress::new(cfg.watchers), seen: Mutex::default() });
    let mut sessions: Vec<Session> = Vec::with_capacity(nsessions);
    for _ in 0..nsessions {
        sessions.push(session(hosts).await?);
    }
    let mut held = Vec::with_capacity(caches);
    for i in 0..caches {
        let cache = NodeCache::new(&sessions[i % nsessions], &path)?;
        cache.initialized().await?;
        let (mut changes, updates) = (cache.changes(), updates.clone());
        tokio::spawn(async move {
            while let Some(change) = changes.next().await {
                // Version 0 is the state before the first write; an error item only reports.
                if let Ok(Some(node)) = change {
                    if node.version() > 0 {
                        updates.record(node.version());
                    }
                }
            }
        });
        held.push(cache);
    }
    let started = Instant::now();
    let (measured_from, until) = (started + WARMUP, started + WARMUP + cfg.duration);
    let mut report = PropagationReport::new(caches, nsessions);
    let mut version = 0;
    let mut expected = 0;
    while Instant::now() < until {
        version += 1;
        expected += cfg.watchers;
        let set = Request::SetData {
            path: path.clone(),
            data: Some(version.to_string().into_bytes()),
            version: -1,
        };
        let sent = Instant::now();
        match call(&mut writer, &set).await? {
            0 => {}
            e => return Err(BenchError::stopped(format!("setData failed with error {e}"))),
        }
        let p = &updates.progress;
        p.wait(&p.notified, expected, "caches stopped updating").await?;
        let latencies = updates.take(version, sent);
        if sent >= measured_from {
            report.add(latencies);
        }
        tokio::time::sleep(cfg.gap).await;
    }
    report.seconds = cfg.duration.as_secs_f64();
    for cache in &held {
        cache.close();
    }
    for s in sessions {
        s.close().await;
    }
    Ok(report)
}
