//! [`Server`]: start (recovery, bind), the accept loop, admitting a connection, shutdown.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_core::{Core, Now};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::admin;
use crate::config::{Durability, ServerConfig};
use crate::connection;
use crate::durable;
use crate::flow_control::ConnCtl;
use crate::metrics;
use crate::output_queue::ConnOut;
use crate::shared::{ConnHandle, Inner};
use crate::timer::timer_loop;

/// Errors starting a server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The data directory could not be recovered.
    #[error("cannot recover the data directory: {0}")]
    Recover(#[from] rzk_storage::StorageError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

/// A running rzk server.
pub struct Server {
    inner: Arc<Inner>,
    local_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    admin_addr: Option<SocketAddr>,
    tasks: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Binds the listen address and starts serving on the current tokio runtime.
    ///
    /// # Errors
    /// [`ServerError::Bind`] if the address cannot be bound.
    ///
    /// # Cancellation safety
    /// Binding is the only await; dropping the future before it completes leaves nothing
    /// running.
    pub async fn start(config: ServerConfig) -> Result<Server, ServerError> {
        let recovered = match &config.durability {
            Durability::InMemory => None,
            Durability::Disk(disk) => {
                let disk = disk.clone();
                let r = tokio::task::spawn_blocking(move || durable::recover(&disk))
                    .await
                    .expect("recovery task")?;
                Some(r)
            }
        };
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|source| ServerError::Bind { addr: config.bind, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr: config.bind, source })?;
        let metrics_listener = bind_http(config.metrics).await?;
        let metrics_addr = metrics_listener.as_ref().map(|(_, a)| *a);
        let admin_listener = bind_http(config.admin.as_ref().map(|a| a.addr)).await?;
        let admin_addr = admin_listener.as_ref().map(|(_, a)| *a);
        let origin = Instant::now();
        let mut core_config = config.core.clone();
        core_config.client_port = local_addr.port();
        core_config.max_packet_bytes = config.max_packet_bytes;
        // A client with the same `jute.maxbuffer` as the server could not read a larger reply.
        core_config.reply_bytes_max = core_config.reply_bytes_max.max(config.max_packet_bytes);
        let core = Core::new(core_config, Now { mono_ms: 0, wall_ms: 0 });
        let inner = Arc::new(Inner::new(config, core, origin));
        // Session ids are seeded from the wall clock, which the placeholder above lacked.
        // Recovered sessions wait, without expiring, for `run` to start serving.
        {
            let mut sh = inner.lock();
            let cfg = sh.core.config().clone();
            let now = inner.now();
            sh.core = match recovered {
                None => Core::new(cfg, now),
                Some((state, log)) => {
                    let Durability::Disk(disk) = &inner.config.durability else { unreachable!() };
                    sh.log_tx = Some(durable::start(&inner, disk.clone(), log));
                    Core::with_state(cfg, state, now)
                }
            };
        }
        let mut http = Vec::new();
        if let Some((l, addr)) = metrics_listener {
            tracing::info!(%addr, "Prometheus metrics on http://{addr}/metrics");
            http.push(tokio::spawn(metrics::serve(inner.clone(), l)));
        }
        if let (Some((l, addr)), Some(admin)) = (admin_listener, &inner.config.admin) {
            let url = admin.command_url.trim_end_matches('/').to_string();
            tracing::info!(%addr, "AdminServer on http://{addr}{url}");
            http.push(tokio::spawn(admin::serve(inner.clone(), l, url)));
        }
        let tasks = tokio::spawn(run(inner.clone(), listener, http));
        tracing::info!(%local_addr, "rzk server listening");
        Ok(Server { inner, local_addr, metrics_addr, admin_addr, tasks })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Where Prometheus metrics are served, if they are.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Where the AdminServer listens, if it does.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// Resolves if the server fails and stops serving (for example when the log cannot be
    /// synced), with the reason.
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn failed(&self) -> String {
        loop {
            let notified = self.inner.failed.notified();
            if let Some(why) = self.inner.failure() {
                return why;
            }
            notified.await;
        }
    }

    /// `host:port`, as ZooKeeper clients take it.
    pub fn connect_string(&self) -> String {
        self.local_addr.to_string()
    }

    /// Stops accepting, closes every connection and waits for the tasks to end. Sessions are
    /// not closed: an in-memory server simply forgets them.
    ///
    /// # Cancellation safety
    /// Safe: the shutdown signal is sent before the first await.
    pub async fn shutdown(self) {
        self.inner.shutdown.notify_one();
        let _ = self.tasks.await;
        // Dropping the sender lets the log thread finish its last batch and exit.
        self.inner.lock().log_tx = None;
    }
}

/// Binds an HTTP listener (metrics, AdminServer) if one is configured: its listener and the
/// address it got.
async fn bind_http(
    addr: Option<SocketAddr>,
) -> Result<Option<(TcpListener, SocketAddr)>, ServerError> {
    let Some(addr) = addr else { return Ok(None) };
    let bind_error = |source| ServerError::Bind { addr, source };
    let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    Ok(Some((listener, local)))
}

/// Serves the client port until shutdown; `http` are the HTTP listeners' tasks, aborted then.
async fn run(inner: Arc<Inner>, listener: TcpListener, http: Vec<tokio::task::JoinHandle<()>>) {
    let mut conns = JoinSet::new();
    // Recovered sessions get their full timeout from the first accept, not from the restore:
    // a client may count its timeout from when it could first reach the server again. Before
    // the timer starts, so that nothing expires in between.
    let now = inner.now();
    inner.lock().core.start_serving(now);
    let timer = tokio::spawn(timer_loop(inner.clone()));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if let Some(task) = admit(&inner, stream, peer) {
                        conns.spawn(task);
                    }
                }
                Err(e) => {
                    // Usually EMFILE: back off instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = inner.shutdown.notified() => break,
        }
    }
    timer.abort();
    for task in http {
        task.abort();
    }
    conns.shutdown().await;
}

fn admit(
    inner: &Arc<Inner>,
    stream: TcpStream,
    peer: SocketAddr,
) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
    let _ = stream.set_nodelay(true);
    let cfg = &inner.config;
    let mut sh = inner.lock();
    let ip = peer.ip();
    let from_ip = sh.per_ip.get(&ip).copied().unwrap_or(0);
    if cfg.max_client_connections_per_ip != 0 && from_ip >= cfg.max_client_connections_per_ip {
        tracing::warn!(%peer, limit = cfg.max_client_connections_per_ip,
            "refusing connection: too many connections from this address (maxClientCnxns)");
        return None;
    }
    if sh.conns.len() >= cfg.max_connections {
        tracing::warn!(%peer, limit = cfg.max_connections, "refusing connection: server full");
        return None;
    }
    let conn = sh.next_conn;
    sh.next_conn += 1;
    *sh.per_ip.entry(ip).or_insert(0) += 1;
    let (tx, rx) = mpsc::unbounded_channel();
    let ctl = Arc::new(ConnCtl::default());
    let (rd, wr) = stream.into_split();
    let wr = Arc::new(wr);
    let out = ConnOut::new(tx, wr.clone(), ctl.clone());
    sh.conns.insert(conn, ConnHandle { out: Arc::new(out), ip, ctl: ctl.clone() });
    sh.core.open(conn, peer);
    drop(sh);
    Some(connection::serve(inner.clone(), conn, peer, rd, wr, rx, ctl))
}
