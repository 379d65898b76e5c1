//! Cache test support: a recorder of a cache's events, the subtree as the server holds it,
//! and the check every cache scenario ends with: the cache equals the server, and its events,
//! replayed, give the same tree with no impossible or repeated event.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_recipes::cache::{CacheEvent, CacheEvents, CacheItem, TreeCache};

/// A tree as `path -> (data, mzxid)`.
pub type Tree = BTreeMap<String, (Vec<u8>, i64)>;

/// How long a cache may take to converge on a loaded machine (a new session included).
pub const CONVERGE: Duration = Duration::from_secs(30);

/// Every item of one event stream, collected in the background.
pub struct Recorder {
    items: Arc<Mutex<Vec<CacheItem>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Recorder {
    pub fn start(mut events: CacheEvents) -> Recorder {
        let items: Arc<Mutex<Vec<CacheItem>>> = Arc::default();
        let sink = items.clone();
        let task = tokio::spawn(async move {
            while let Some(item) = events.next().await {
                sink.lock().unwrap().push(item);
            }
        });
        Recorder { items, task }
    }

    pub fn items(&self) -> Vec<CacheItem> {
        self.items.lock().unwrap().clone()
    }

    /// The events, panicking at an error item.
    pub fn events(&self) -> Vec<CacheEvent> {
        self.items().into_iter().map(|i| i.unwrap_or_else(|e| panic!("error item: {e}"))).collect()
    }

    /// `+path data`, `~path data`, `-path`, `init`: the sequence in a comparable form.
    pub fn lines(&self) -> Vec<String> {
        self.events().iter().map(line).collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An event as a line (the form the Java CuratorCache listener prints too).
pub fn line(e: &CacheEvent) -> String {
    match e {
        CacheEvent::Added { path, node } => {
            format!("+{path} {}", String::from_utf8_lossy(&node.data))
        }
        CacheEvent::Updated { path, node, .. } => {
            format!("~{path} {}", String::from_utf8_lossy(&node.data))
        }
        CacheEvent::Removed { path, .. } => format!("-{path}"),
        CacheEvent::Initialized => "init".into(),
        other => format!("{other:?}"),
    }
}

/// The events replayed into a tree. Panics at an event that cannot follow the ones before:
/// an `Added` of a held node, an `Updated` or `Removed` of an absent one, an `Updated` to the
/// state already held, a second `Initialized`.
pub fn replay(events: &[CacheEvent]) -> Tree {
    let mut tree = Tree::new();
    let mut initialized = false;
    for (i, e) in events.iter().enumerate() {
        match e {
            CacheEvent::Added { path, node } => {
                let old = tree.insert(path.clone(), (node.data.clone(), node.stat.mzxid));
                assert!(old.is_none(), "event {i}: {path} added twice: {events:#?}");
            }
            CacheEvent::Updated { path, node, old } => {
                let held = tree.get_mut(path).unwrap_or_else(|| panic!("event {i}: {path} absent"));
                assert_eq!(held.1, old.stat.mzxid, "event {i}: old state of {path}");
                assert_ne!(held.1, node.stat.mzxid, "event {i}: {path} repeated");
                *held = (node.data.clone(), node.stat.mzxid);
            }
            CacheEvent::Removed { path, .. } => {
                assert!(tree.remove(path).is_some(), "event {i}: {path} removed twice");
            }
            CacheEvent::Initialized => {
                assert!(!initialized, "event {i}: initialized twice");
                initialized = true;
            }
            other => panic!("unknown event {other:?}"),
        }
    }
    tree
}

/// The subtree at `root` as the server holds it (only `root` when `single`).
pub async fn server_tree(client: &rzk_client::Client, root: &str, single: bool) -> Tree {
    let mut tree = Tree::new();
    let mut todo = vec![root.to_string()];
    while let Some(p) = todo.pop() {
        match client.get_data(&p).await {
            Ok((data, stat)) => {
                tree.insert(p.clone(), (data, stat.mzxid));
            }
            Err(rzk_client::Error::NoNode) => continue,
            Err(e) => panic!("read {p}: {e}"),
        }
        if single {
            continue;
        }
        match client.list_children(&p).await {
            Ok(names) => {
                todo.extend(names.iter().map(|n| format!("{}/{n}", p.trim_end_matches('/'))))
            }
            Err(rzk_client::Error::NoNode) => {}
            Err(e) => panic!("list {p}: {e}"),
        }
    }
    tree
}

/// What the cache holds, in the same form.
pub fn cache_tree(cache: &TreeCache) -> Tree {
    cache.snapshot().into_iter().map(|(p, n)| (p, (n.data, n.stat.mzxid))).collect()
}

/// Waits until the cache and the replay of `recorder`'s events both equal the server's tree
/// (which nobody changes meanwhile); returns it.
pub async fn assert_converged(
    cache: &TreeCache,
    recorder: &Recorder,
    client: &rzk_client::Client,
    single: bool,
) -> Tree {
    let server = server_tree(client, cache.path(), single).await;
    let end = Instant::now() + CONVERGE;
    loop {
        let events = recorder.events();
        let (held, replayed) = (cache_tree(cache), replay(&events));
        if held == server && replayed == server {
            return server;
        }
        assert!(
            Instant::now() < end,
            "not converged on {}:\nserver {server:?}\ncache  {held:?}\nevents {:?}",
            cache.path(),
            recorder.lines()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
