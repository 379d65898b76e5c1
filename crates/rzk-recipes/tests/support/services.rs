//! Service cache test support: a recorder of a cache's instance sets (as sorted id lists),
//! and the check the scenarios end with: the cache, and the last set it sent, hold what the
//! server holds.

use std::sync::{Arc, Mutex};

use rzk_recipes::discovery::ServiceCache;
use serde_json::Value;

use super::cache::CONVERGE;
use super::eventually;

/// The sets one `changes()` stream sent, as sorted id lists, collected in the background.
pub struct SetRecorder {
    sets: Arc<Mutex<Vec<Vec<String>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl SetRecorder {
    pub fn start(cache: &ServiceCache<Value>) -> SetRecorder {
        let sets: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let sink = sets.clone();
        let mut changes = cache.changes();
        let task = tokio::spawn(async move {
            while let Some(set) = changes.next().await {
                let set = set.unwrap_or_else(|e| panic!("error item: {e}"));
                sink.lock().unwrap().push(set.instances.into_iter().map(|i| i.id).collect());
            }
        });
        SetRecorder { sets, task }
    }

    pub fn sets(&self) -> Vec<Vec<String>> {
        self.sets.lock().unwrap().clone()
    }
}

impl Drop for SetRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The ids of the instances the cache holds.
pub fn cached_ids(cache: &ServiceCache<Value>) -> Vec<String> {
    cache.instances().into_iter().map(|i| i.id).collect()
}

/// The sorted children of `parent` on the server (empty when it does not exist).
pub async fn server_ids(raw: &rzk_client::Client, parent: &str) -> Vec<String> {
    let mut ids = match raw.list_children(parent).await {
        Ok(ids) => ids,
        Err(rzk_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {parent}: {e}"),
    };
    ids.sort();
    ids
}

/// Waits until the cache and the last set its recorder got are `want`.
pub async fn converged_to(cache: &ServiceCache<Value>, rec: &SetRecorder, want: &[&str]) {
    let what = format!("{} to hold {want:?} (sets sent: {:?})", cache.name(), rec.sets());
    eventually(CONVERGE, &what, || {
        cached_ids(cache) == want && rec.sets().last().is_some_and(|s| s == want)
    })
    .await;
}
