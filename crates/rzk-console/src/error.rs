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
    /// The serving task panicked.
    #[error("the console stopped serving: {0}")]
    Serve(String),
    /// The operating system gave no randomness for the CSRF token of the write forms.
    #[error("no randomness for the write forms' token: {source}")]
    Random {
        /// getrandom's error.
        source: getrandom::Error,
    },
}
