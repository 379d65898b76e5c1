//! A web console for any ZooKeeper-protocol server (Apache ZooKeeper 3.5+, rzk server) that
//! shows the system as people think of it, not as a tree of opaque names: who leads each
//! election and who queues behind, who holds each lock and who waits, which instances of each
//! service are registered, what a config node holds; and, for anything else, the tree itself,
//! children paged, with data, `Stat` and ACL. Pages update within a second of a change,
//! driven by persistent watches.
//!
//! It knows the layouts rzk-recipes writes, which are Curator's (and the seeds' plain
//! `EPHEMERAL_SEQUENTIAL` election), and reads them with the recipes' own readers, so what it
//! shows is what a recipe would decide.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use rzk_console::{Console, ConsoleConfig};
//! use rzk_recipes::session::{Session, SessionConfig};
//!
//! let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
//! let console = Console::start(session, "127.0.0.1:8080".parse()?, ConsoleConfig::default()).await?;
//! println!("console on http://{}", console.addr());
//! console.wait().await?;
//! # Ok(()) }
//! ```
//!
//! # Security
//! Node names and data are untrusted: every value reaches the page through maud, which
//! escapes it, and the page's content security policy allows no inline script, so a node
//! named `<script>` is text. The console is read-only unless [`ConsoleConfig::with_writes`]
//! (then each write is confirmed and carries a CSRF token); it binds where it is told (the CLI
//! defaults to 127.0.0.1), and may require a login of its own ([`BasicAuth`]).
//!
//! # Limits
//! Connections, children per page, nodes a scan reads, paths watched live and data bytes
//! shown are bounded by [`Limits`]; each connection's header time, header bytes and lifetime
//! by the `HTTP_*` constants ([`http_limits`]), under rzk-server's bounded HTTP listener.
//!
//! # On rzk server's AdminServer port
//! [`Console::handler`] gives the same routes as a handler to mount with
//! `rzk_server::Server::mount_admin` (`rzk server --console`): every link a page holds is
//! relative, so the console serves the same under `/console/` as at `/`.
//!
//! # Modules
//! - `read/`: what the tree says, as plain values: the recipe found under each path (`scan`),
//!   a node (`node`), an election or a lock (`recipe`), a registry (`services`). No HTML.
//! - `pages/`: those values as HTML, one file per page, on one layout.
//! - `http/`: the routes, the guard in front of them, the console's login and its writes.
//! - `live`: the watches that tell open pages to refresh.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod coalesce;
mod error;
mod http;
mod live;
mod pages;
mod read;
mod shared;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rzk_recipes::session::Session;
use rzk_server::{HttpHandler, HttpLimits};
use shared::Shared;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use error::ConsoleError;
pub use http::auth::BasicAuth;

/// How long a client may take to send a request's headers.
pub const HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes buffered for one request's headers (431 and a close beyond).
pub const HTTP_REQUEST_BYTES_MAX: usize = 16 * 1024;
/// Longest a connection lives, keep-alive and event streams included: a live page's event
/// stream reconnects by itself.
pub const HTTP_CONNECTION_LIFETIME: Duration = Duration::from_secs(300);

/// The HTTP bounds of a console with `limits`: its connections, and the `HTTP_*` constants.
/// On the AdminServer's port, give these to its `AdminConfig::limits`.
pub fn http_limits(limits: &Limits) -> HttpLimits {
    HttpLimits {
        connections_max: limits.max_connections.max(1),
        header_read_timeout: HTTP_HEADER_READ_TIMEOUT,
        request_bytes_max: HTTP_REQUEST_BYTES_MAX,
        connection_lifetime: HTTP_CONNECTION_LIFETIME,
    }
}

/// Bounds on what the console holds and reads.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Limits {
    /// HTTP connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Children listed on one page of the tree browser (a node with 100,000 stays usable).
    pub children_per_page: usize,
    /// Nodes the overview's scan lists before it stops (and says so).
    pub scan_nodes_max: usize,
    /// Paths watched for live pages at once; a page beyond it is served, but not live.
    pub live_paths_max: usize,
    /// Bytes of a node's data shown; the rest is counted, not sent.
    pub data_bytes_shown_max: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 64,
            children_per_page: 100,
            scan_nodes_max: 20_000,
            live_paths_max: 64,
            data_bytes_shown_max: 64 * 1024,
        }
    }
}

/// How the console is served.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConsoleConfig {
    /// A login the console asks for; none by default (bind it to loopback then).
    pub auth: Option<BasicAuth>,
    /// The servers the overview asks who they are (`srvr`): the connect string's, usually.
    pub servers: Vec<String>,
    /// Offer writes: set data at a version, delete a node, ask a participant to go; each
    /// confirmed. Off by default.
    pub allow_writes: bool,
    /// Its bounds.
    pub limits: Limits,
}

impl ConsoleConfig {
    /// Asks for `auth` on every request.
    pub fn with_auth(mut self, auth: BasicAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Shows who the servers of `connect` (`h1:p1,h2:p2[/chroot]`) are on the overview.
    pub fn with_servers(mut self, connect: &str) -> Self {
        self.servers = read::servers::hosts(connect);
        self
    }

    /// Offers writes (`--allow-writes`), each behind a confirmation and the console's CSRF
    /// token.
    pub fn with_writes(mut self, on: bool) -> Self {
        self.allow_writes = on;
        self
    }

    /// Other bounds.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// A running console.
pub struct Console {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Console {
    /// Binds `bind` and serves the console over `session`.
    ///
    /// # Errors
    /// [`ConsoleError::Bind`] when the address cannot be bound.
    ///
    /// # Cancellation safety
    /// Safe: dropped before it returns, nothing is left listening.
    pub async fn start(
        session: Session,
        bind: SocketAddr,
        config: ConsoleConfig,
    ) -> Result<Console, ConsoleError> {
        let listener =
            TcpListener::bind(bind).await.map_err(|source| ConsoleError::Bind { bind, source })?;
        let addr = listener.local_addr().map_err(|source| ConsoleError::Bind { bind, source })?;
        let limits = http_limits(&config.limits);
        let handler = Console::handler(session, config, addr)?;
        let task = tokio::spawn(rzk_server::serve_http("console", listener, limits, handler));
        Ok(Console { addr, task })
    }

    /// The console's routes over `session`, as a handler of rzk-server's HTTP listener, for a
    /// listener on `addr` (the `Host` names it answers to are that address's): to mount on
    /// rzk server's AdminServer port. Its live watches last as long as the handler does.
    ///
    /// # Errors
    /// [`ConsoleError::Random`] when writes are on and the OS gives no CSRF token.
    pub fn handler(
        session: Session,
        config: ConsoleConfig,
        addr: SocketAddr,
    ) -> Result<HttpHandler, ConsoleError> {
        let live = live::Live::new(session.clone(), config.limits.live_paths_max);
        let csrf = if config.allow_writes {
            Some(http::write::csrf_token().map_err(|source| ConsoleError::Random { source })?)
        } else {
            None
        };
        let hosts = shared::allowed_hosts(addr);
        let (overview, sessions) = (Default::default(), Default::default());
        let shared = Shared { session, config, live, csrf, hosts, overview, sessions };
        Ok(http::handler(Arc::new(shared)))
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves for as long as it is not dropped.
    ///
    /// # Errors
    /// [`ConsoleError::Serve`] if the serving task panicked.
    ///
    /// # Cancellation safety
    /// Safe: the console keeps serving in its own task; drop the [`Console`] to stop it.
    pub async fn wait(mut self) -> Result<(), ConsoleError> {
        (&mut self.task).await.map_err(|e| ConsoleError::Serve(e.to_string()))
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.task.abort();
    }
}
