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
//! by the `HTTP_*` constants.
//!
//! # Modules
//! - `read/`: what the tree says, as plain values: the recipe found under each path (`scan`),
//!   a node (`node`), an election or a lock (`recipe`), a registry (`services`). No HTML.
//! - `pages/`: those values as HTML, one file per page, on one layout.
//! - `http/`: the routes, the console's login, and the listener that bounds connections.
//! - `live`: the watches that tell open pages to refresh.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod http;
mod live;
mod pages;
mod read;
mod shared;

use std::net::SocketAddr;
use std::sync::Arc;

use rzk_recipes::session::Session;
use shared::Shared;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use error::ConsoleError;
pub use http::auth::BasicAuth;
pub use http::listener::{
    HTTP_CONNECTION_LIFETIME, HTTP_HEADER_READ_TIMEOUT, HTTP_REQUEST_BYTES_MAX,
};

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
        let live = live::Live::new(session.clone(), config.limits.live_paths_max);
        let max_connections = config.limits.max_connections;
        let csrf = if config.allow_writes {
            Some(http::write::csrf_token().map_err(|source| ConsoleError::Random { source })?)
        } else {
            None
        };
        let hosts = shared::allowed_hosts(addr);
        let shared = Arc::new(Shared { session, config, live, csrf, hosts });
        let task = tokio::spawn(http::serve(listener, max_connections, shared));
        Ok(Console { addr, task })
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
