//! The rzk server shell: tokio sockets and timers around the deterministic [`rzk_core::Core`].
//!
//! - [`Server`]: listen, accept, frame, feed the core, write what it emits.
//! - [`TestServer`]: an in-process server on a free port for tests, like Curator's
//!   `TestingServer`.
//!
//! # Layout
//! - `server`: [`Server`]: start-up, the accept loop, admitting a connection, shutdown.
//! - `shared`: what every task shares: the core and the connection table behind one mutex.
//! - `pump`: routing what the core emits, transactions to the log and frames to the queues.
//! - `output_queue`: each connection's queue and its flusher; `flow_control`: the counters
//!   and signals a connection's reader, writer and flusher share.
//! - `connection`: a connection's reader and writer tasks; `timer`: the timer task.
//! - `durable`: recovery, the log thread (group commit) behind its narrow `LogHost`
//!   interface, snapshots and autopurge.
//! - `http_listener`: the bounded HTTP listener the metrics endpoint, the AdminServer and the
//!   web console share.
//! - `metrics`: the Prometheus endpoint, on a listener of its own.
//! - `admin`: the AdminServer, ZooKeeper's `/commands` over HTTP; `admin_commands`: each
//!   command's JSON, from the numbers the four-letter words read.
//! - `config`, `testing`: [`ServerConfig`] and [`TestServer`].
//! - `tls`: the secure port's settings and rustls configuration, and the `x509` identity of a
//!   client certificate; `transport`: a connection's stream, plain or TLS, behind the few
//!   operations the connection code uses.
//!
//! ```no_run
//! let server = rzk_server::TestServer::start().unwrap();
//! println!("connect to {}", server.connect_string());
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admin;
mod admin_commands;
mod admin_host;
mod config;
mod connection;
mod distribution;
mod durable;
mod flow_control;
#[cfg(feature = "gssapi")]
mod gssapi;
mod http_listener;
mod metrics;
mod output_queue;
mod pump;
mod request_clock;
mod server;
mod server_stats;
mod shared;
mod testing;
mod timer;
mod tls;
mod transport;
mod writer_task;

pub use config::{
    AdminConfig, DiskConfig, Durability, ServerConfig, FDS_RESERVED, LISTEN_BACKLOG_DEFAULT,
};
#[cfg(feature = "gssapi")]
pub use gssapi::{sasl_id, GssapiMechanism, PrincipalRules, GSSAPI_TOKEN_BYTES_MAX};
// The bounded listener, for the CLI's client-side metrics endpoint and the web console.
pub use http_listener::{
    serve_http, serve_text, HttpBody, HttpFuture, HttpHandler, HttpLimits, HttpResponse,
    HTTP_CONNECTIONS_MAX, HTTP_CONNECTION_LIFETIME, HTTP_HEADER_READ_TIMEOUT,
    HTTP_REQUEST_BYTES_MAX,
};
pub use server::{Liveness, Server, ServerError};
pub use testing::{TestServer, TestServerBuilder};
pub use tls::{ClientAuth, TlsConfig, TlsError};
