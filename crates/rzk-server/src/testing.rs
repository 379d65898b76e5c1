//! An in-process server for tests, in the role of Curator's `TestingServer`.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::mpsc;
use std::thread;

use tokio::sync::oneshot;

use crate::config::{DiskConfig, Durability, ServerConfig};
use crate::server::{Server, ServerError};

/// Options for a [`TestServer`].
#[derive(Debug, Clone)]
pub struct TestServerBuilder {
    config: ServerConfig,
}

impl TestServerBuilder {
    /// ZooKeeper's `tickTime`; session timeouts are clamped to [2, 20] ticks.
    pub fn tick_ms(mut self, tick_ms: u32) -> Self {
        let keep = self.config.core.clone();
        self.config.core = rzk_core::Config { ..rzk_core::Config::with_tick_ms(tick_ms) };
        self.config.core.extended_types_enabled = keep.extended_types_enabled;
        self.config.core.super_digest = keep.super_digest;
        self.config.core.four_letter_words = keep.four_letter_words;
        self.config.core.container_check_interval_ms = keep.container_check_interval_ms;
        self
    }

    /// Allow TTL nodes.
    pub fn extended_types(mut self, enabled: bool) -> Self {
        self.config.core.extended_types_enabled = enabled;
        self
    }

    /// The super user's digest, `super:base64(sha1("super:password"))`.
    pub fn super_digest(mut self, digest: impl Into<String>) -> Self {
        self.config.core.super_digest = Some(digest.into());
        self
    }

    /// How often empty containers and expired TTL nodes are reaped.
    pub fn container_check_interval_ms(mut self, ms: u64) -> Self {
        self.config.core.container_check_interval_ms = ms;
        self
    }

    /// Keeps data in `dir` (log and snapshots), so that [`TestServer::restart`] recovers it.
    pub fn data_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.config.durability = Durability::Disk(DiskConfig::new(dir.into()));
        self
    }

    /// Durable storage with full control (a crash-injecting backend, small segments, ...).
    pub fn disk(mut self, disk: DiskConfig) -> Self {
        self.config.durability = Durability::Disk(disk);
        self
    }

    /// Full access to the shell configuration.
    pub fn config(mut self, f: impl FnOnce(&mut ServerConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// Starts the server on its own thread and runtime, so it works from any test, async or
    /// not, and outlives the caller's runtime.
    ///
    /// # Errors
    /// [`ServerError::Bind`] if no port could be bound.
    pub fn start(self) -> Result<TestServer, ServerError> {
        let (addr, stop, thread) = spawn(self.config.clone())?;
        Ok(TestServer { addr, config: self.config, stop: Some(stop), thread: Some(thread) })
    }
}

type Running = (SocketAddr, oneshot::Sender<()>, thread::JoinHandle<()>);

fn spawn(config: ServerConfig) -> Result<Running, ServerError> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread = thread::Builder::new()
        .name("rzk-test-server".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async move {
                match Server::start(config).await {
                    Ok(server) => {
                        let _ = ready_tx.send(Ok(server.local_addr()));
                        let _ = stop_rx.await;
                        server.shutdown().await;
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            });
        })
        .expect("spawn test server thread");
    let addr = ready_rx.recv().expect("test server thread reports")?;
    Ok((addr, stop_tx, thread))
}

/// A server on 127.0.0.1 and a free port, stopped when dropped.
///
/// ```
/// let server = rzk_server::TestServer::builder().tick_ms(100).start().unwrap();
/// assert!(server.connect_string().starts_with("127.0.0.1:"));
/// ```
pub struct TestServer {
    addr: SocketAddr,
    config: ServerConfig,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl TestServer {
    /// Options: tick length, TTL nodes, super digest.
    pub fn builder() -> TestServerBuilder {
        let mut config = ServerConfig::new(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)));
        config.max_client_connections_per_ip = 0;
        config.core.four_letter_words = vec!["*".into()];
        TestServerBuilder { config }
    }

    /// A server with defaults (tick 2000 ms, all four-letter words allowed).
    ///
    /// # Errors
    /// [`ServerError::Bind`] if no port could be bound.
    pub fn start() -> Result<TestServer, ServerError> {
        TestServer::builder().start()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `127.0.0.1:port`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Stops the server and waits for it.
    pub fn stop(mut self) {
        self.stop_now();
    }

    /// Stops the server and starts it again on the same port, as an operator's restart: a
    /// durable server recovers its data and sessions, an in-memory one starts empty.
    ///
    /// # Errors
    /// [`ServerError`] if the port cannot be bound again or recovery fails.
    pub fn restart(&mut self) -> Result<(), ServerError> {
        self.stop_now();
        let mut config = self.config.clone();
        config.bind = self.addr;
        let (addr, stop, thread) = spawn(config)?;
        self.addr = addr;
        self.stop = Some(stop);
        self.thread = Some(thread);
        Ok(())
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}
