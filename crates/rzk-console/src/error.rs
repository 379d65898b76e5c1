//! [`ConsoleError`]: why the console could not serve.

use std::net::SocketAddr;

/// Why the console could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsoleError {
    /// The address could not be bound.
    #[error("cannot listen on {bind}: {source}")]
    Bind {
        /// The address asked for.
        bind: SocketAddr,
        /// The socket's error.
        source: std::io::Error,
    },
    /// The listener failed while serving.
    #[error("the console stopped serving: {0}")]
    Serve(std::io::Error),
}
