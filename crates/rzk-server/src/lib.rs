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
//! - `metrics`: the Prometheus endpoint, on a listener of its own.
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

mod config;
mod connection;
mod durable;
mod flow_control;
mod metrics;
mod output_queue;
mod pump;
mod server;
mod shared;
mod testing;
mod timer;
mod tls;
mod transport;

pub use config::{DiskConfig, Durability, ServerConfig};
pub use metrics::{
    METRICS_CONNECTIONS_MAX, METRICS_CONNECTION_LIFETIME, METRICS_HEADER_READ_TIMEOUT,
    METRICS_REQUEST_BYTES_MAX,
};
pub use server::{Server, ServerError};
pub use testing::{TestServer, TestServerBuilder};
pub use tls::{ClientAuth, TlsConfig, TlsError};
