//! The caches under faults, against rzk and Apache ZooKeeper 3.8: writers change the tree
//! (adds, updates, a subtree removed, the config node deleted and created again) while the
//! watcher's connection is cut, while its session expires, and across a server restart.
//! Every cache (a tree cache on persistent watches, one on one-shot watches, a node cache)
//! ends equal to the server; each event stream, replayed, gives the server's tree with no
//! repeated or impossible event; the node cache never yields one state twice in a row; a
//! node deleted and created again unseen is reported removed, then added (CURATOR-391).
//!
//! The one-shot cache has a session of its own: ZooKeeper 3.8 keeps one watch mode per path
//! and session, so a one-shot watch there replaces a persistent one (ZOOKEEPER-4466).

mod support;

use std::sync::{Arc, Mutex};

use rzk_client::{Acls, CreateMode};
use rzk_recipes::{
    cache::{CacheOptions, CacheWatch, NodeCache, NodeState, TreeCache},
    session::Session,
};
use support::cache::*;
use support::*;

both_servers! {
    t84_cache_converges_after_cut => converges_after_cut;
    t84_cache_converges_after_expiry => converges_after_expiry;
    t84_cache_converges_after_restart => converges_after_restart;
}

/// The caches of one watcher session and what they told.
struct Watcher {
    trees: Vec<(TreeCache, Recorder)>,
    node: NodeCache,
    states: Arc<Mutex<Vec<NodeState>>>,
}

impl Watcher {
    /// The persistent caches on `s`, the one-shot one on `oneshot`.
    async fn start(s: &Session, oneshot: &Session, root: &str) -> Watcher {
        let mut trees = Vec::new();
        for (s, watch) in [(s, CacheWatch::Auto), (oneshot, CacheWatch::OneShot)] {
            let cache = TreeCache::new(s, root, CacheOptions::tree().with_watch(watch)).unwrap();
            let rec = Recorder::start(cache.events());
            cache.initialized().await.unwrap();
            trees.push((cache, rec));
        }
        let node = NodeCache::new(s, &config(root)).unwrap();
        node.initialized().await.unwrap();
        let states: Arc<Mutex<Vec<NodeState>>> = Arc::default();
        let mut changes = node.changes();
        let sink = states.clone();
        tokio::spawn(async move {
            while let Some(state) = changes.next().await {
                sink.lock().unwrap().push(state.expect("no error item"));
            }
        });
        Watcher { trees, node, states }
    }

    /// Every cache equals the server; the config node was seen removed, then added again
    /// when `recreated`.
    async fn converged(&self, raw: &rzk_client::Client, recreated: bool) {
        for (cache, rec) in &self.trees {
            assert_converged(cache, rec, raw, false).await;
            if recreated {
                let lines = rec.lines();
                let removed =
                    lines.iter().rposition(|l| *l == format!("-{}", config(cache.path())));
                let added = lines
                    .iter()
                    .rposition(|l| l.starts_with(&format!("+{} ", config(cache.path()))));
                assert!(removed.is_some() && removed < added, "recreation not reported: {lines:?}");
            }
        }
        let (data, stat) = raw.get_data(&config(self.trees[0].0.path())).await.unwrap();
        eventually(CONVERGE, "the node cache converged", || {
            self.states.lock().unwrap().last().cloned().flatten().is_some_and(|n| n.stat == stat)
        })
        .await;
        let states = self.states.lock().unwrap().clone();
        assert!(states.windows(2).all(|w| w[0] != w[1]), "a state repeated: {states:?}");
        assert_eq!(self.node.current().map(|n| n.data), Some(data));
    }
}

fn config(root: &str) -> String {
    format!("{root}/config")
}

fn persistent() -> rzk_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

/// The starting tree: the root, its config node, and `n0` with a child.
async fn initial_tree(raw: &rzk_client::Client, root: &str) {
    raw.mkdir(&format!("{root}/n0"), &persistent()).await.unwrap();
    raw.create(&config(root), b"v0", &persistent()).await.unwrap();
    raw.create(&format!("{root}/n0/leaf"), b"x", &persistent()).await.unwrap();
}

/// Round `round` of changes: a new subtree, an update, the previous subtree removed, and the
/// config node deleted and created again.
async fn mutate(raw: &rzk_client::Client, root: &str, round: u32) {
    raw.create(&format!("{root}/n{round}"), b"new", &persistent()).await.unwrap();
    raw.create(&format!("{root}/n{round}/leaf"), b"y", &persistent()).await.unwrap();
    raw.set_data(&format!("{root}/n{round}"), b"changed", None).await.unwrap();
    delete_tree(raw, &format!("{root}/n{}", round - 1)).await;
    raw.delete(&config(root), None).await.unwrap();
    raw.create(&config(root), format!("v{round}").as_bytes(), &persistent()).await.unwrap();
}

/// The starting tree, and a watcher whose two sessions connect through proxies.
async fn proxied_watcher(
    server: &Server,
    kind: Kind,
) -> (rzk_client::Client, String, Watcher, [(Session, rzk_testkit::proxy::Proxy); 2]) {
    let raw = raw_client(server).await;
    let root = test_path("t84", kind);
    initial_tree(&raw, &root).await;
    let sessions = [session_via_proxy(server).await, session_via_proxy(server).await];
    let w = Watcher::start(&sessions[0].0, &sessions[1].0, &root).await;
    (raw, root, w, sessions)
}

async fn converges_after_cut(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let (raw, root, w, [(s, proxy), (s1, proxy1)]) = proxied_watcher(&server, kind).await;
    for round in 1..=3 {
        proxy.cut();
        proxy1.cut();
        eventually(CONVERGE, "suspended", || !s.state().is_connected()).await;
        eventually(CONVERGE, "suspended", || !s1.state().is_connected()).await;
        mutate(&raw, &root, round).await;
        proxy.heal();
        proxy1.heal();
        w.converged(&raw, true).await;
    }
    // Connected: live changes still arrive after the reconnects.
    mutate(&raw, &root, 4).await;
    w.converged(&raw, false).await;
}

async fn converges_after_expiry(kind: Kind) {
    let server = Server::start(kind, Settings::default());
    let (raw, root, w, [(s, proxy), (s1, proxy1)]) = proxied_watcher(&server, kind).await;
    let firsts = [s.session_id(), s1.session_id()];
    proxy.cut();
    proxy1.cut();
    mutate(&raw, &root, 1).await;
    force_expire(&server, &s, &proxy).await;
    force_expire(&server, &s1, &proxy1).await;
    for (s, first) in [&s, &s1].into_iter().zip(firsts) {
        eventually(CONVERGE, "a new session", || {
            s.session_id().is_some_and(|id| Some(id) != first)
        })
        .await;
    }
    w.converged(&raw, true).await;
    mutate(&raw, &root, 2).await;
    w.converged(&raw, false).await;
}

async fn converges_after_restart(kind: Kind) {
    let settings = Settings { durable: true, ..Settings::default() };
    let mut server = Server::start(kind, settings);
    let root = test_path("t84", kind);
    {
        let raw = raw_client(&server).await;
        initial_tree(&raw, &root).await;
    }
    let (s, s1) = (session(&server).await, session(&server).await);
    let w = Watcher::start(&s, &s1, &root).await;
    server.restart();
    let raw = raw_client(&server).await;
    mutate(&raw, &root, 1).await;
    w.converged(&raw, false).await;
    mutate(&raw, &root, 2).await;
    w.converged(&raw, false).await;
}
