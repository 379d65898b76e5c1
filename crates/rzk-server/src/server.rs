//! [`Server`]: start (recovery, bind), the accept loop, admitting a connection, shutdown.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_core::{Core, Now};
use tokio::net::{TcpListener, TcpStream};
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
use crate::tls;
use crate::transport::{self, ReadSide, WriteSide};

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
    /// Neither the plain nor the secure client port is configured.
    #[error("no client port: the plain port is off and no secure port is configured")]
    NoClientPort,
    /// The secure port's certificates or key could not be used.
    #[error("secure client port: {0}")]
    Tls(#[from] tls::TlsError),
    /// A handler could not be mounted on the AdminServer's port.
    #[error("cannot mount {prefix} on the AdminServer: {why}")]
    Mount {
        /// The path asked for.
        prefix: String,
        /// Why not.
        why: &'static str,
    },
}

/// A running rzk server.
pub struct Server {
    inner: Arc<Inner>,
    local_addr: SocketAddr,
    secure_addr: Option<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
    admin_addr: Option<SocketAddr>,
    admin_mount: admin::Mount,
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
        let secure = match &config.tls {
            None => None,
            Some(t) => Some(SecurePort::bind(t, config.listen_backlog).await?),
        };
        let secure_addr = secure.as_ref().map(|s| s.addr);
        let bind_err = |source| ServerError::Bind { addr: config.bind, source };
        let listener = match config.plain_port {
            true => Some(listen(config.bind, config.listen_backlog).map_err(bind_err)?),
            false => None,
        };
        let local_addr = match (&listener, secure_addr) {
            (Some(l), _) => l.local_addr().map_err(bind_err)?,
            (None, Some(addr)) => addr,
            (None, None) => return Err(ServerError::NoClientPort),
        };
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
                    let (log_tx, log_thread) = durable::start(&inner, disk.clone(), log);
                    sh.log_tx = Some(log_tx);
                    sh.log_thread = log_thread;
                    Core::with_state(cfg, state, now)
                }
            };
        }
        let admin_mount = admin::Mount::default();
        let mut http = Vec::new();
        if let Some((l, addr)) = metrics_listener {
            tracing::info!(%addr, "Prometheus metrics on http://{addr}/metrics");
            http.push(tokio::spawn(metrics::serve(inner.clone(), l)));
        }
        if let (Some((l, addr)), Some(admin)) = (admin_listener, &inner.config.admin) {
            let url = admin.command_url.trim_end_matches('/').to_string();
            tracing::info!(%addr, "AdminServer on http://{addr}{url}");
            let served = admin::serve(inner.clone(), l, url, admin.limits, admin_mount.clone());
            http.push(tokio::spawn(served));
        }
        if listener.is_some() {
            tracing::info!(%local_addr, "rzk server listening");
        }
        if let Some(addr) = secure_addr {
            tracing::info!(%addr, "rzk server listening for TLS (secure client port)");
        }
        let tasks = tokio::spawn(run(inner.clone(), listener, secure, http));
        Ok(Server { inner, local_addr, secure_addr, metrics_addr, admin_addr, admin_mount, tasks })
    }

    /// The bound address (useful with port 0): the plain client port's, or the secure port's
    /// when only that one is served.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The bound address of the secure (TLS) client port, if there is one.
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure_addr
    }

    /// Where Prometheus metrics are served, if they are.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Where the AdminServer listens, if it does.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// Serves `handler` under `prefix` (`/console`) on the AdminServer's port, beside the
    /// commands: every request whose path is under it, any method, with `prefix` taken off the
    /// path; `prefix` itself redirects to `prefix/`. Once per server.
    ///
    /// # Errors
    /// [`ServerError::Mount`] when the AdminServer is off, something is mounted already, or
    /// `prefix` is not a path of its own beside the commands'.
    pub fn mount_admin(
        &self,
        prefix: &str,
        handler: crate::http_listener::HttpHandler,
    ) -> Result<(), ServerError> {
        let refuse = |why| Err(ServerError::Mount { prefix: prefix.to_string(), why });
        let Some(admin) = &self.inner.config.admin else {
            return refuse("the AdminServer is off");
        };
        let commands = admin.command_url.trim_end_matches('/');
        let clash = |a: &str, b: &str| a == b || a.starts_with(&format!("{b}/"));
        if !prefix.starts_with('/') || prefix.ends_with('/') || prefix.contains(['?', '#']) {
            return refuse("a mount is a path like /console, without a trailing slash");
        }
        if clash(prefix, commands) || clash(commands, prefix) {
            return refuse("it overlaps the command URL");
        }
        self.admin_mount
            .set((prefix.to_string(), handler))
            .or_else(|_| refuse("a handler is mounted already"))
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

    /// Stops accepting, closes every connection, waits for the tasks to end, then for the
    /// transaction log to sync what it was given and close. Sessions are not closed: an
    /// in-memory server simply forgets them, a durable one recovers them.
    ///
    /// # Cancellation safety
    /// Safe: the shutdown signal is sent before the first await; a future dropped while the
    /// log closes leaves its thread to finish on its own.
    pub async fn shutdown(self) {
        self.inner.shutdown.notify_one();
        let _ = self.tasks.await;
        // Dropping the sender lets the log thread finish its last batch and exit.
        let log_thread = {
            let mut sh = self.inner.lock();
            sh.log_tx = None;
            sh.log_thread.take()
        };
        if let Some(thread) = log_thread {
            match tokio::task::spawn_blocking(move || thread.join()).await {
                Ok(Ok(())) => tracing::info!("transaction log synced and closed"),
                _ => tracing::error!(
                    "the transaction log thread panicked: its last batch may be unsynced"
                ),
            }
        }
    }

    /// A handle that tells whether the server still works, for a service manager's
    /// watchdog: usable from any thread, after the server has moved.
    pub fn liveness(&self) -> Liveness {
        Liveness(self.inner.clone())
    }
}

/// Tells whether a server still works (see [`Server::liveness`]).
#[derive(Clone)]
pub struct Liveness(Arc<Inner>);

impl Liveness {
    /// Whether the server still works: it has not failed, and its core's lock comes free
    /// within `within` (a core wedged holding it does not). Blocks the calling thread for up
    /// to `within`.
    ///
    /// # Errors
    /// Why it does not work, in words.
    pub fn check(&self, within: Duration) -> Result<(), String> {
        if let Some(why) = self.0.failure() {
            return Err(why);
        }
        match self.0.try_lock_for(within) {
            Some(_) => Ok(()),
            None => Err(format!("the server's core has been busy for more than {within:?}")),
        }
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

/// A client port's listener with room for `backlog` connections the accept loop has not
/// taken yet (the kernel caps it at `net.core.somaxconn`). tokio's `bind` asks for 128
/// (std's), and a connection storm past the backlog has its SYNs dropped and retried only
/// after a second, then three: a backlog as deep as the kernel allows turns a storm of
/// thousands into a queue the accept loop drains in milliseconds.
fn listen(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    // As std's and tokio's `bind` do: a restarted server rebinds a port with connections
    // still in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// Serves the client ports until shutdown; `http` are the HTTP listeners' tasks, aborted then.
async fn run(
    inner: Arc<Inner>,
    listener: Option<TcpListener>,
    secure: Option<SecurePort>,
    http: Vec<tokio::task::JoinHandle<()>>,
) {
    let mut conns = JoinSet::new();
    // Recovered sessions get their full timeout from the first accept, not from the restore:
    // a client may count its timeout from when it could first reach the server again. Before
    // the timer starts, so that nothing expires in between.
    let now = inner.now();
    inner.lock().core.start_serving(now);
    let timer = tokio::spawn(timer_loop(inner.clone()));
    loop {
        tokio::select! {
            accepted = accept_on(listener.as_ref()) => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let (rd, wr) = transport::plain(stream);
                    if let Some(task) = admit(&inner, rd, wr, peer, None) {
                        conns.spawn(task);
                    }
                }
                Err(e) => {
                    // Usually EMFILE: back off instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            accepted = accept_on(secure.as_ref().map(|s| &s.listener)) => match accepted {
                Ok((stream, peer)) => {
                    if let Some(s) = &secure {
                        if let Some(task) = s.handshake(&inner, stream, peer) {
                            conns.spawn(task);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!("accept on the secure port failed: {e}");
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

/// The next connection on `listener`; never, if there is none.
async fn accept_on(listener: Option<&TcpListener>) -> io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Takes a connection into the core and the connection table, within the connection limits,
/// with the identity its transport established, if any; returns the task that serves it.
fn admit(
    inner: &Arc<Inner>,
    rd: ReadSide,
    wr: WriteSide,
    peer: SocketAddr,
    identity: Option<rzk_proto::Id>,
) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
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
    let ctl = Arc::new(ConnCtl::new(inner.stats.latency_pool(conn)));
    let out = Arc::new(ConnOut::new(Arc::new(wr), ctl.clone()));
    sh.conns.insert(conn, ConnHandle { out: out.clone(), ip, ctl: ctl.clone() });
    sh.core.open(conn, peer);
    if let Some(id) = identity {
        sh.core.authenticated(conn, id);
    }
    drop(sh);
    Some(connection::serve(inner.clone(), conn, peer, rd, out, ctl))
}

/// The secure client port: its listener, the TLS acceptor, and the bound on handshakes in
/// progress.
struct SecurePort {
    listener: TcpListener,
    addr: SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    handshakes: Arc<tokio::sync::Semaphore>,
    handshakes_max: usize,
    handshake_timeout: Duration,
}

impl SecurePort {
    async fn bind(cfg: &tls::TlsConfig, backlog: u32) -> Result<SecurePort, ServerError> {
        let acceptor = tls::acceptor(cfg)?;
        let bind_err = |source| ServerError::Bind { addr: cfg.bind, source };
        let listener = listen(cfg.bind, backlog).map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        Ok(SecurePort {
            listener,
            addr,
            acceptor,
            handshakes: Arc::new(tokio::sync::Semaphore::new(cfg.handshakes_max)),
            handshakes_max: cfg.handshakes_max,
            handshake_timeout: Duration::from_millis(cfg.handshake_timeout_ms),
        })
    }

    /// The task that runs `stream`'s handshake, within the timeout, and then serves it as any
    /// connection; `None` if too many handshakes are in progress.
    fn handshake(
        &self,
        inner: &Arc<Inner>,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        let Ok(permit) = self.handshakes.clone().try_acquire_owned() else {
            tracing::warn!(%peer, limit = self.handshakes_max,
                "refusing TLS connection: too many handshakes in progress");
            return None;
        };
        let _ = stream.set_nodelay(true);
        let (inner, acceptor, timeout) =
            (inner.clone(), self.acceptor.clone(), self.handshake_timeout);
        Some(async move {
            let done = tokio::time::timeout(timeout, acceptor.accept(stream)).await;
            drop(permit);
            let stream = match done {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    tracing::warn!(%peer, "closing TLS connection: handshake failed: {e}");
                    return;
                }
                Err(_) => {
                    tracing::warn!(%peer, timeout_ms = timeout.as_millis() as u64,
                        "closing TLS connection: no handshake within the handshake timeout \
                         (ssl.handshakeDetectionTimeoutMillis)");
                    return;
                }
            };
            let (tcp, session) = stream.into_inner();
            let identity = tls::x509_id(&session).map(|dn| rzk_proto::Id::new("x509", dn));
            if let Some(id) = &identity {
                tracing::debug!(%peer, id = %id.id, "TLS client authenticated as x509");
            }
            let (rd, wr) = transport::tls(tcp, session);
            if let Some(serve) = admit(&inner, rd, wr, peer, identity) {
                serve.await;
            }
        })
    }
}
