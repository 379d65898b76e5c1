//! Election test support: one "server" handle over the in-process rzk server and Apache
//! ZooKeeper 3.8, the invariant checker, the participant processes, and small helpers. Every
//! scenario runs against both kinds. The generic scaffolding (ports, directories, the proxy,
//! the ZooKeeper and Java launchers) is rzk-testkit's.
#![allow(dead_code)]

pub mod cache;
pub mod candidate;
pub mod checker;
pub mod curator;
pub mod ensemble;
pub mod faults;
pub mod java;
pub mod locks;
pub mod participant;
pub mod services;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use rzk_recipes::{
    election::{Contender, LeaderSelector, Participants, SelectorOptions},
    session::{Session, SessionConfig},
    Leadership,
};
use rzk_testkit::proxy::Proxy;
use rzk_testkit::tempdir::TempDir;
use rzk_testkit::zookeeper::{self, ZooKeeper};

pub use rzk_testkit::wait::eventually;

pub use rzk_testkit::Kind;

/// Server settings shared by the scenarios (docs/election.md §4.2).
#[derive(Debug, Clone)]
pub struct Settings {
    pub tick_ms: u32,
    pub container_check_ms: u64,
    pub durable: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { tick_ms: 500, container_check_ms: 500, durable: false }
    }
}

/// A running server of either kind, stopped on drop (before its directory is removed).
pub struct Server {
    pub kind: Kind,
    inner: Inner,
    dir: TempDir,
    settings: Settings,
}

enum Inner {
    Rzk(Option<Box<rzk_server::TestServer>>),
    Zk(ZooKeeper),
}

static SEQ: AtomicU64 = AtomicU64::new(0);

fn start_rzk(settings: &Settings, dir: &Path, bind: Option<std::net::SocketAddr>) -> Inner {
    let mut b = rzk_server::TestServer::builder()
        .tick_ms(settings.tick_ms)
        .container_check_interval_ms(settings.container_check_ms);
    if let Some(addr) = bind {
        b = b.config(|c| c.bind = addr);
    }
    if settings.durable {
        b = b.data_dir(dir.join("data"));
    }
    Inner::Rzk(Some(Box::new(b.start().expect("start rzk test server"))))
}

impl Server {
    /// Starts a server of `kind`.
    pub fn start(kind: Kind, settings: Settings) -> Server {
        let (inner, dir) = match kind {
            Kind::Rzk => {
                let dir = TempDir::new("rzk-recipes-rzk");
                (start_rzk(&settings, dir.path(), None), dir)
            }
            Kind::ZooKeeper => {
                let dir = TempDir::new("rzk-recipes-zk");
                let zk_settings = zookeeper::Settings {
                    tick_ms: settings.tick_ms,
                    container_check_ms: settings.container_check_ms,
                };
                (Inner::Zk(ZooKeeper::start(dir.path(), &zk_settings)), dir)
            }
        };
        Server { kind, inner, dir, settings }
    }

    /// The connect string.
    pub fn hosts(&self) -> String {
        match &self.inner {
            Inner::Rzk(s) => s.as_ref().expect("running").connect_string(),
            Inner::Zk(zk) => zk.hosts(),
        }
    }

    pub fn port(&self) -> u16 {
        match &self.inner {
            Inner::Rzk(s) => s.as_ref().expect("running").addr().port(),
            Inner::Zk(zk) => zk.port(),
        }
    }

    /// Stops the server and starts it again on the same port, keeping its data when durable
    /// (ZooKeeper always is).
    pub fn restart(&mut self) {
        match &mut self.inner {
            Inner::Rzk(s) => s.as_mut().expect("running").restart().expect("restart rzk"),
            Inner::Zk(zk) => zk.restart(),
        }
    }

    /// Stops the server, waits `downtime`, and starts it again on the same port with its data
    /// (rzk must be durable for that; ZooKeeper always is).
    pub fn restart_after(&mut self, downtime: Duration) {
        match &mut self.inner {
            Inner::Rzk(s) => {
                let old = s.take().expect("running");
                let addr = old.addr();
                old.stop();
                std::thread::sleep(downtime);
                self.inner = start_rzk(&self.settings, self.dir.path(), Some(addr));
            }
            Inner::Zk(zk) => {
                zk.stop();
                std::thread::sleep(downtime);
                zk.resume();
            }
        }
    }
}

/// A node of kazoo's `Lock` recipe, which no Curator recipe can order.
pub const KAZOO: &str = "0123456789abcdef0123456789abcdef__lock__0000000000";

/// The requested session timeout of every participant (granted as is with tick 500 ms).
pub const T: Duration = Duration::from_secs(4);

/// A managed session on `server`.
pub async fn session(server: &Server) -> Session {
    session_with(server, SessionConfig::new(server.hosts()).with_session_timeout(T)).await
}

/// A managed session with a custom config.
pub async fn session_with(_server: &Server, config: SessionConfig) -> Session {
    Session::connect(config).await.expect("connect")
}

/// A raw client for the harness's own reads and writes.
pub async fn raw_client(server: &Server) -> rzk_client::Client {
    rzk_client::Client::connector()
        .with_session_timeout(T)
        .connect(&server.hosts())
        .await
        .expect("raw connect")
}

/// Deletes `path` and everything below it (zkCli `deleteall`), retrying on `NotEmpty`.
pub async fn delete_all(client: &rzk_client::Client, path: &str) {
    for _ in 0..50 {
        let children = match client.list_children(path).await {
            Ok(c) => c,
            Err(rzk_client::Error::NoNode) => return,
            Err(e) => panic!("list {path}: {e}"),
        };
        for c in children {
            Box::pin(delete_all(client, &format!("{path}/{c}"))).await;
        }
        match client.delete(path, None).await {
            Ok(()) | Err(rzk_client::Error::NoNode) => return,
            Err(rzk_client::Error::NotEmpty) => continue,
            Err(e) => panic!("delete {path}: {e}"),
        }
    }
    panic!("could not delete {path}");
}

/// Deletes `path` and everything below it in one multi, so that nobody sees a part of the
/// tree gone (retried while recipes change it); returns when it was done.
pub async fn delete_tree(client: &rzk_client::Client, path: &str) -> std::time::Instant {
    'attempt: for _ in 0..100 {
        // Breadth first: reversed, every node comes before its parent.
        let mut nodes = vec![path.to_string()];
        let mut i = 0;
        while i < nodes.len() {
            match client.list_children(&nodes[i]).await {
                Ok(children) => {
                    let parent = nodes[i].clone();
                    nodes.extend(children.into_iter().map(|c| format!("{parent}/{c}")));
                }
                Err(e) => {
                    eprintln!("deleteall raced: {e}");
                    continue 'attempt;
                }
            }
            i += 1;
        }
        let mut w = client.new_multi_writer();
        for node in nodes.iter().rev() {
            w.add_delete(node, None).unwrap();
        }
        match w.commit().await {
            Ok(_) => return std::time::Instant::now(),
            Err(e) => eprintln!("deleteall raced: {e}"),
        }
    }
    panic!("could not delete {path}");
}

/// Polls `path` until it exists (`present`) or is gone; panics with `what` after `limit`.
pub async fn wait_presence(
    client: &rzk_client::Client,
    path: &str,
    present: bool,
    limit: Duration,
    what: &str,
) {
    let deadline = std::time::Instant::now() + limit;
    while client.check_stat(path).await.unwrap().is_some() != present {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Expires `session`'s current ZooKeeper session on the server (docs/election.md §4.2):
/// cut the participant's proxy so that it cannot reconnect, attach a second client to the
/// session and close it, then heal. The participant reconnects to a dead session. Returns
/// when the close was asked, so that a bound on what follows excludes the attach.
pub async fn force_expire(server: &Server, session: &Session, proxy: &Proxy) -> std::time::Instant {
    let info = session.session_info().expect("session info");
    proxy.cut();
    let other = rzk_client::Client::connector()
        .with_session(info)
        .with_session_timeout(T)
        .connect(&server.hosts())
        .await
        .expect("attach to the session");
    // Dropping the only client closes the session; wait until the server has done it.
    let mut state = other.state_watcher();
    let closing = std::time::Instant::now();
    drop(other);
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while !state.peek_state().is_terminated() {
            state.changed().await;
        }
    })
    .await;
    proxy.heal();
    closing
}

/// A managed session that connects through its own proxy.
pub async fn session_via_proxy(server: &Server) -> (Session, Proxy) {
    let p = Proxy::start(server.hosts());
    let s = Session::connect(SessionConfig::new(p.hosts()).with_session_timeout(T))
        .await
        .expect("connect via proxy");
    (s, p)
}

/// Logs to stderr when `RZK_TEST_LOG` is set (`debug` or `trace`).
pub fn init_tracing() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let level = match std::env::var("RZK_TEST_LOG").as_deref() {
            Ok("trace") => tracing::Level::TRACE,
            Ok(_) => tracing::Level::DEBUG,
            Err(_) => return,
        };
        let _ = tracing_subscriber::fmt().with_max_level(level).with_test_writer().try_init();
    });
}

/// A heavy-scenario slot (`rzk_testkit::slots`), held for the scenario: the machine has 2
/// cores and the assertions have time bounds.
pub async fn serial() -> rzk_testkit::slots::Slot {
    rzk_testkit::slots::heavy_async().await
}

/// A unique election path for a test.
pub fn test_path(test: &str, kind: Kind) -> String {
    format!(
        "/t/{test}-{}/{}",
        match kind {
            Kind::Rzk => "rzk",
            Kind::ZooKeeper => "zk",
        },
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Defines `#[tokio::test]`s `<name>_rzk` and `<name>_zookeeper` running `scenario(kind)`;
/// `<name>_zookeeper` only with the `zookeeper-tests` feature.
#[macro_export]
macro_rules! both_servers {
    ($($name:ident => $scenario:ident;)*) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn rzk() {
                    $crate::support::init_tracing();
                    let _g = $crate::support::serial().await;
                    let t = std::time::Instant::now();
                    super::$scenario($crate::support::Kind::Rzk).await;
                    eprintln!("{}::Rzk: {:?}", stringify!($name), t.elapsed());
                }
                // Apache ZooKeeper only in the `zookeeper-tests` tier: the cfg is the test
                // crate's, where this expands.
                #[cfg(feature = "zookeeper-tests")]
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn zookeeper() {
                    $crate::support::init_tracing();
                    let _g = $crate::support::serial().await;
                    let t = std::time::Instant::now();
                    super::$scenario($crate::support::Kind::ZooKeeper).await;
                    eprintln!("{}::ZooKeeper: {:?}", stringify!($name), t.elapsed());
                }
            }
        )*
    };
}

/// The naming check (docs/election.md §4.2): every child is `_c_<uuid>-<lock><10 digits>`.
pub fn assert_curator_name(name: &str, lock: &str) {
    let rest = name.strip_prefix("_c_").unwrap_or_else(|| panic!("no _c_ prefix: {name}"));
    let (uuid, tail) = rest.split_at(36);
    assert!(
        uuid.len() == 36
            && uuid.chars().enumerate().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => c == '-',
                _ => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
            }),
        "bad uuid in {name}"
    );
    let seq = tail
        .strip_prefix('-')
        .and_then(|t| t.strip_prefix(lock))
        .unwrap_or_else(|| panic!("bad lock name in {name}"));
    assert!(seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit()), "bad sequence in {name}");
}

/// An auto-requeueing selector whose task holds leadership for `hold` (unless lost first),
/// reported to `checker`, started, and in the queue when this returns.
pub async fn queued_selector(
    s: &Session,
    path: &str,
    id: &str,
    hold: Duration,
    checker: &checker::Checker,
) -> LeaderSelector {
    let sel = LeaderSelector::new(
        s,
        path,
        SelectorOptions::default().with_id(id).with_auto_requeue(true),
    )
    .unwrap();
    checker.attach(id, sel.events(), None);
    sel.start(move |_l| async move {
        tokio::time::sleep(hold).await;
        Ok(())
    })
    .unwrap();
    eventually(Duration::from_secs(2), "joined", || sel.our_path().is_some()).await;
    sel
}

/// The children of a lock path in Curator's order (by the ten-digit sequence at the end).
pub async fn children(client: &rzk_client::Client, path: &str) -> Vec<String> {
    match client.list_children(path).await {
        Ok(mut c) => {
            c.sort_by_key(|n| n[n.len() - 10..].to_string());
            c
        }
        Err(rzk_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

/// How long [`wait_children`] waits for a lock path's children to settle on a loaded machine.
pub const CHILDREN_LIMIT: Duration = Duration::from_secs(8);

/// Waits until the lock path has `n` children (at most [`CHILDREN_LIMIT`]); returns them in
/// order.
pub async fn wait_children(client: &rzk_client::Client, path: &str, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + CHILDREN_LIMIT;
    loop {
        let kids = children(client, path).await;
        if kids.len() == n {
            return kids;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "expected {n} nodes in {path}, have {kids:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// After A lost its term `old` and B took over with `new`: A rejoins on a new node within
/// `within`, behind B and with a larger token; returns the participants as B lists them.
pub async fn rejoined_behind(
    a: &Contender,
    b: &Contender,
    old: &Leadership,
    new: &Leadership,
    within: Duration,
) -> Participants {
    eventually(within, "a rejoined", || a.our_path().is_some_and(|p| p != old.node_path())).await;
    let p = b.participants().await.unwrap();
    let ids: Vec<&str> = p.list.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["b", "a"]);
    assert!(p.list[1].token > new.token());
    p
}

/// The end of the selector scenarios where A (`selectors[0]`) lost its term `old` and B
/// (`selectors[1]`) took over with `new`: A requeues behind B within `within`, every selector
/// closes, and the checker's invariants hold.
pub async fn requeued_behind_then_close(
    selectors: Vec<LeaderSelector>,
    old: &Leadership,
    new: &Leadership,
    within: Duration,
    checker: &checker::Checker,
) {
    rejoined_behind(&selectors[0], &selectors[1], old, new, within).await;
    for s in selectors {
        s.close().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    checker.assert_ok();
}

/// The requests the server received from session `sid` so far (`cons`' `recved`).
pub fn requests_received(server: &Server, sid: rzk_client::SessionId) -> u64 {
    let out = rzk_testkit::four_letter::four_letter_local(server.port(), "cons").unwrap();
    let tag = format!("sid={:#x}", sid.0);
    let line = out.lines().find(|l| l.contains(&tag)).unwrap_or_else(|| panic!("{tag}: {out}"));
    let recved = line.split([',', '(']).find_map(|f| f.strip_prefix("recved="));
    recved.and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("recved in {line}"))
}
