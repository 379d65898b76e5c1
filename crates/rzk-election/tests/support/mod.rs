//! Test support: one "server" handle over the in-process rzk server and Apache ZooKeeper 3.8,
//! the invariant checker, and small helpers. Every scenario runs against both kinds.
#![allow(dead_code)]

pub mod checker;
pub mod java;
pub mod participant;
pub mod proxy;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rzk_election::{LeaderSelector, SelectorOptions, Session, SessionConfig};

/// Which server a scenario runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rzk,
    ZooKeeper,
}

/// Server settings shared by the scenarios (docs/election.md §3.0, §4.2).
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

/// A running server of either kind, stopped on drop.
pub struct Server {
    pub kind: Kind,
    inner: Inner,
    dir: PathBuf,
    settings: Settings,
}

enum Inner {
    Rzk(Option<Box<rzk_server::TestServer>>),
    Zk { child: Option<Child>, port: u16, cfg: PathBuf, settings: Settings },
}

static SEQ: AtomicU64 = AtomicU64::new(0);

fn temp_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind").local_addr().expect("addr").port()
}

/// Asserts that the ZooKeeper answering on `port` is the one keeping its data in `data_dir`: a
/// port picked free can be taken by another process before the server meant for it binds it,
/// and a test would then talk to that process's server (the scenarios of one binary are
/// serialised, so it would not be one of ours).
pub fn assert_served_by(port: u16, data_dir: &Path) {
    let conf = four_letter(port, "conf").unwrap_or_default();
    assert!(
        conf.contains(&format!("dataDir={}", data_dir.display())),
        "port {port} is served by another server, not the ZooKeeper of {}:\n{conf}",
        data_dir.display()
    );
}

/// Sends a four-letter word and returns the answer.
pub fn four_letter(port: u16, word: &str) -> std::io::Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(word.as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

fn spawn_zookeeper(cfg: &Path, dir: &Path, settings: &Settings) -> Child {
    let log = std::fs::File::create(dir.join("server.log")).expect("log");
    Command::new("java")
        .arg("-Xmx256m")
        .arg("-XX:+UseSerialGC")
        .arg("-XX:TieredStopAtLevel=1")
        .arg("-Dzookeeper.extendedTypesEnabled=true")
        .arg(format!("-Dznode.container.checkIntervalMs={}", settings.container_check_ms))
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg("-cp")
        .arg("/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar")
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(cfg)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start java (is the Debian zookeeper package installed?)")
}

fn wait_ready(port: u16, child: &mut Child, dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            panic!("ZooKeeper exited with {status} before it was ready:\n{log}");
        }
        if four_letter(port, "srvr").is_ok_and(|o| o.contains("Mode:")) {
            assert_served_by(port, &dir.join("data"));
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("ZooKeeper on port {port} not ready after 60 s");
}

impl Server {
    /// Starts a server of `kind`.
    pub fn start(kind: Kind, settings: Settings) -> Server {
        match kind {
            Kind::Rzk => {
                let dir = temp_dir("rzk-election-rzk");
                let mut b = rzk_server::TestServer::builder()
                    .tick_ms(settings.tick_ms)
                    .container_check_interval_ms(settings.container_check_ms);
                if settings.durable {
                    b = b.data_dir(dir.join("data"));
                }
                let server = b.start().expect("start rzk test server");
                Server { kind, inner: Inner::Rzk(Some(Box::new(server))), dir, settings }
            }
            Kind::ZooKeeper => {
                let dir = temp_dir("rzk-election-zk");
                let port = free_port();
                let cfg = dir.join("zoo.cfg");
                let text = format!(
                    "tickTime={}\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
                     maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=*\n\
                     extendedTypesEnabled=true\n",
                    settings.tick_ms,
                    dir.join("data").display()
                );
                std::fs::write(&cfg, text).expect("zoo.cfg");
                let mut child = spawn_zookeeper(&cfg, &dir, &settings);
                wait_ready(port, &mut child, &dir);
                Server {
                    kind,
                    inner: Inner::Zk { child: Some(child), port, cfg, settings: settings.clone() },
                    dir,
                    settings,
                }
            }
        }
    }

    /// The connect string.
    pub fn hosts(&self) -> String {
        match &self.inner {
            Inner::Rzk(s) => s.as_ref().expect("running").connect_string(),
            Inner::Zk { port, .. } => format!("127.0.0.1:{port}"),
        }
    }

    pub fn port(&self) -> u16 {
        match &self.inner {
            Inner::Rzk(s) => s.as_ref().expect("running").addr().port(),
            Inner::Zk { port, .. } => *port,
        }
    }

    /// Stops the server and starts it again on the same port, keeping its data when durable
    /// (ZooKeeper always is).
    pub fn restart(&mut self) {
        match &mut self.inner {
            Inner::Rzk(s) => s.as_mut().expect("running").restart().expect("restart rzk"),
            Inner::Zk { child, port, cfg, settings } => {
                if let Some(mut c) = child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                let mut c = spawn_zookeeper(cfg, &self.dir, settings);
                wait_ready(*port, &mut c, &self.dir);
                *child = Some(c);
            }
        }
    }
}

impl Server {
    /// Stops the server, waits `downtime`, and starts it again on the same port with its data
    /// (rzk must be durable for that; ZooKeeper always is).
    pub fn restart_after(&mut self, downtime: Duration) {
        match &mut self.inner {
            Inner::Rzk(s) => {
                let old = s.take().expect("running");
                let addr = old.addr();
                old.stop();
                std::thread::sleep(downtime);
                let settings = self.settings.clone();
                let mut b = rzk_server::TestServer::builder()
                    .tick_ms(settings.tick_ms)
                    .container_check_interval_ms(settings.container_check_ms)
                    .config(|c| c.bind = addr);
                if settings.durable {
                    b = b.data_dir(self.dir.join("data"));
                }
                *s = Some(Box::new(b.start().expect("restart rzk on the same port")));
            }
            Inner::Zk { child, port, cfg, settings } => {
                if let Some(mut c) = child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                std::thread::sleep(downtime);
                let mut c = spawn_zookeeper(cfg, &self.dir, settings);
                wait_ready(*port, &mut c, &self.dir);
                *child = Some(c);
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Inner::Zk { child: Some(c), .. } = &mut self.inner {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
pub async fn raw_client(server: &Server) -> zookeeper_client::Client {
    zookeeper_client::Client::connector()
        .with_session_timeout(T)
        .connect(&server.hosts())
        .await
        .expect("raw connect")
}

/// Deletes `path` and everything below it (zkCli `deleteall`), retrying on `NotEmpty`.
pub async fn delete_all(client: &zookeeper_client::Client, path: &str) {
    for _ in 0..50 {
        let children = match client.list_children(path).await {
            Ok(c) => c,
            Err(zookeeper_client::Error::NoNode) => return,
            Err(e) => panic!("list {path}: {e}"),
        };
        for c in children {
            Box::pin(delete_all(client, &format!("{path}/{c}"))).await;
        }
        match client.delete(path, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => return,
            Err(zookeeper_client::Error::NotEmpty) => continue,
            Err(e) => panic!("delete {path}: {e}"),
        }
    }
    panic!("could not delete {path}");
}

/// Waits until `f` holds, polling every 5 ms, or panics with `what` after `within`.
pub async fn eventually(within: Duration, what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if f() {
            return start.elapsed();
        }
        if start.elapsed() > within {
            panic!("timed out after {within:?} waiting for: {what}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Expires `session`'s current ZooKeeper session on the server (docs/election.md §4.5 t82d):
/// cut the participant's proxy so that it cannot reconnect, attach a second client to the
/// session and close it, then heal. The participant reconnects to a dead session.
pub async fn force_expire(server: &Server, session: &Session, proxy: &proxy::Proxy) {
    let info = session.session_info().expect("session info");
    proxy.cut();
    let other = zookeeper_client::Client::connector()
        .with_session(info)
        .with_session_timeout(T)
        .connect(&server.hosts())
        .await
        .expect("attach to the session");
    // Dropping the only client closes the session; wait until the server has done it.
    let mut state = other.state_watcher();
    drop(other);
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while !state.peek_state().is_terminated() {
            state.changed().await;
        }
    })
    .await;
    proxy.heal();
}

/// A managed session that connects through its own proxy.
pub async fn session_via_proxy(server: &Server) -> (Session, proxy::Proxy) {
    let p = proxy::Proxy::start(server.hosts()).await;
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

/// Serialises the scenarios of one test binary: the machine has 2 cores and the assertions
/// have time bounds.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(())).lock().await
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

/// Defines `#[tokio::test]`s `<name>_rzk` and `<name>_zookeeper` running `scenario(kind)`.
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

/// The naming check of §3.0: every child is `_c_<uuid>-<lock><10 digits>`.
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
