//! Shell settings: sockets and the limits that protect the server from its clients.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rzk_storage::Storage;

/// Where acknowledged writes live.
#[derive(Clone)]
pub enum Durability {
    /// Nothing survives a restart; a write is acknowledged once applied.
    InMemory,
    /// A transaction log and snapshots; a write is acknowledged once its log record is synced.
    Disk(DiskConfig),
}

impl std::fmt::Debug for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Durability::InMemory => f.write_str("InMemory"),
            Durability::Disk(d) => {
                f.debug_tuple("Disk").field(&d.snap_dir).field(&d.log_dir).finish()
            }
        }
    }
}

/// Settings of the durable store, named after `zoo.cfg` where ZooKeeper has them.
#[derive(Clone)]
pub struct DiskConfig {
    /// Where snapshots go (`dataDir`).
    pub snap_dir: PathBuf,
    /// Where the transaction log goes (`dataLogDir`; defaults to `dataDir`).
    pub log_dir: PathBuf,
    /// The file system; tests substitute a crash-injecting one.
    pub storage: Arc<dyn Storage>,
    /// Preallocated size of each log segment (`preAllocSize`), bytes.
    pub segment_bytes: u64,
    /// Transactions between snapshots (`snapCount`); each interval is drawn from
    /// [snapCount/2 + 1, snapCount] so that servers do not snapshot in step.
    pub snap_count: u64,
    /// A snapshot also waits until the log written since the last one has reached this
    /// percentage of that snapshot's size (0: `snap_count` alone decides, as in ZooKeeper).
    ///
    /// Without it a growing tree is serialised again every `snap_count` transactions, so the
    /// snapshot work per write grows with the tree (populating 1M znodes walked 6.5M nodes in
    /// 13 snapshots). With it the snapshots of a growing tree are spaced geometrically and
    /// cost O(1) per write, while recovery still replays at most about this share of a
    /// snapshot's size in log, or `snap_count` transactions, whichever is larger.
    pub snapshot_log_pct_min: u64,
    /// Snapshots kept by autopurge (`autopurge.snapRetainCount`, at least 3).
    pub snap_retain_count: usize,
    /// Hours between autopurge runs (`autopurge.purgeInterval`); 0 disables it.
    pub purge_interval_hours: u64,
    /// Most transactions written under one fsync (bounds one group commit).
    pub group_commit_txns_max: usize,
    /// Average write rate of a snapshot, bytes per second (0: unlimited). Snapshots are
    /// written in the background at this pace, 128 KiB per write and sync, so that they do
    /// not delay the log's fdatasyncs, which every reply waits for.
    pub snapshot_write_bytes_per_sec_max: u64,
    /// Average write rate of the zeros of the next log segment, bytes per second (0:
    /// unlimited). Once a quarter of a segment is used, a background thread writes the next
    /// one ([`rzk_storage::prepare_spare`]), so that the log's syncs do not allocate blocks as
    /// they go. Slower than snapshots: a spare is only an optimisation, and one not ready at
    /// the roll is simply not used.
    pub spare_write_bytes_per_sec_max: u64,
}

impl DiskConfig {
    /// ZooKeeper's defaults for a data directory on the real file system.
    pub fn new(data_dir: impl Into<PathBuf>) -> DiskConfig {
        let dir = data_dir.into();
        DiskConfig {
            log_dir: dir.clone(),
            snap_dir: dir,
            storage: Arc::new(rzk_storage::FsStorage),
            segment_bytes: rzk_storage::DEFAULT_SEGMENT_BYTES,
            snap_count: 100_000,
            snapshot_log_pct_min: 100,
            snap_retain_count: 3,
            purge_interval_hours: 0,
            group_commit_txns_max: 10_000,
            snapshot_write_bytes_per_sec_max: 100 * 1024 * 1024,
            spare_write_bytes_per_sec_max: 32 * 1024 * 1024,
        }
    }
}

/// Everything the shell needs to run a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port.
    pub bind: SocketAddr,
    /// Protocol semantics.
    pub core: rzk_core::Config,
    /// In memory or on disk.
    pub durability: Durability,
    /// Largest frame accepted from a client (`jute.maxbuffer`); larger ones close the
    /// connection.
    pub max_packet_bytes: usize,
    /// Connections per client IP (`maxClientCnxns`); 0 means unlimited.
    pub max_client_connections_per_ip: usize,
    /// Connections in total (`maxCnxns`); further connections are refused. By default as
    /// many as the process's file descriptors allow, less [`FDS_RESERVED`].
    pub max_connections: usize,
    /// Connections the kernel queues for the accept loop (`clientPortListenBacklog`), capped
    /// by `net.core.somaxconn`: [`LISTEN_BACKLOG_DEFAULT`] unless set.
    pub listen_backlog: u32,
    /// Requests read from one connection whose replies are not yet written. At the limit the
    /// server stops reading from that connection, so a client that stops reading replies
    /// cannot make the server buffer without bound.
    pub max_outstanding_requests_per_connection: usize,
    /// Bytes queued for one connection (replies and notifications). Past it the connection is
    /// closed: the client is not reading. A quarter of it is also what one connection's
    /// requests may make the server build before the reader waits for the socket to drain,
    /// so a client that reads cannot reach the limit by pipelining large reads.
    pub max_queued_bytes_per_connection: usize,
    /// How long a connection may stay without a session (`zookeeper.nio.sessionlessCnxnTimeout`):
    /// a client that sends half a ConnectRequest and stops would otherwise hold its slot and
    /// its read buffer for ever.
    pub sessionless_connection_timeout_ms: u64,
    /// Where to serve Prometheus metrics (`GET /metrics`), if anywhere
    /// (`metricsProvider.httpHost` and `metricsProvider.httpPort`); port 0 picks a free port.
    pub metrics: Option<SocketAddr>,
    /// Where to serve ZooKeeper's AdminServer commands over HTTP, if anywhere
    /// (`admin.enableServer`, `admin.serverAddress`, `admin.serverPort`, `admin.commandURL`).
    pub admin: Option<AdminConfig>,
    /// The secure client port (`secureClientPort`), served beside `bind`, if any.
    pub tls: Option<crate::tls::TlsConfig>,
    /// Whether the plain client port `bind` is served (the default). Off, with `tls`, only
    /// the secure port is: ZooKeeper's `secureClientPort` without `clientPort`.
    pub plain_port: bool,
    /// The text of the configuration file the server was started from, as the AdminServer's
    /// `initial_configuration` command reports it; `None` when started without one.
    pub initial_configuration: Option<String>,
}

/// The AdminServer's listener and the path its commands live under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    /// Address to listen on (`admin.serverAddress`, `admin.serverPort`); port 0 picks a free
    /// port.
    pub addr: SocketAddr,
    /// The path of the command list; each command is `<command_url>/<name>`
    /// (`admin.commandURL`, ZooKeeper's default `/commands`).
    pub command_url: String,
    /// Its connections' bounds: the server's HTTP limits unless a mounted handler (the
    /// console's live pages) holds connections longer.
    pub limits: crate::http_listener::HttpLimits,
}

impl AdminConfig {
    /// ZooKeeper's default command path.
    pub const DEFAULT_COMMAND_URL: &'static str = "/commands";

    /// The AdminServer on `addr` under the default `/commands`.
    pub fn new(addr: SocketAddr) -> AdminConfig {
        AdminConfig {
            addr,
            command_url: AdminConfig::DEFAULT_COMMAND_URL.into(),
            limits: crate::http_listener::HttpLimits::SERVER,
        }
    }
}

/// The listen backlog unless `clientPortListenBacklog` says otherwise: Linux's largest
/// default `somaxconn` (ZooKeeper's is the JVM's 50).
pub const LISTEN_BACKLOG_DEFAULT: u32 = 4096;

/// File descriptors kept back from client connections: the log's and snapshot's files, the
/// HTTP listeners' connections, the runtime's own.
pub const FDS_RESERVED: usize = 256;

/// Used when the process's descriptor limit cannot be read (not Linux).
const MAX_CONNECTIONS_FALLBACK: usize = 10_000;

/// As many connections as the process may open descriptors (its soft `RLIMIT_NOFILE`, from
/// `/proc/self/limits`), less [`FDS_RESERVED`]: past that, accept would fail with EMFILE
/// anyway, after the connection had cost the kernel a socket.
fn default_max_connections() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits").ok().and_then(|limits| {
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse::<usize>().ok()
    });
    match soft {
        Some(n) => n.saturating_sub(FDS_RESERVED).max(1),
        None => MAX_CONNECTIONS_FALLBACK,
    }
}

impl ServerConfig {
    /// Defaults for a listen address, with ZooKeeper's defaults where it has them.
    pub fn new(bind: SocketAddr) -> ServerConfig {
        ServerConfig {
            bind,
            core: rzk_core::Config::default(),
            durability: Durability::InMemory,
            max_packet_bytes: rzk_proto::DEFAULT_MAX_PACKET_BYTES,
            max_client_connections_per_ip: 60,
            max_connections: default_max_connections(),
            listen_backlog: LISTEN_BACKLOG_DEFAULT,
            max_outstanding_requests_per_connection: 1_000,
            max_queued_bytes_per_connection: 64 * 1024 * 1024,
            sessionless_connection_timeout_ms: 10_000,
            metrics: None,
            admin: None,
            tls: None,
            plain_port: true,
            initial_configuration: None,
        }
    }
}
