//! The rzk server shell: tokio sockets and timers around the deterministic [`rzk_core::Core`].
//!
//! - [`Server`]: listen, accept, frame, feed the core, write what it emits.
//! - [`TestServer`]: an in-process server on a free port for tests, like Curator's
//!   `TestingServer`.
//!
//! ```no_run
//! let server = rzk_server::TestServer::start().unwrap();
//! println!("connect to {}", server.connect_string());
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod durable;
mod shell;
mod testing;

pub use config::{DiskConfig, Durability, ServerConfig};
pub use shell::{Server, ServerError};
pub use testing::{TestServer, TestServerBuilder};
