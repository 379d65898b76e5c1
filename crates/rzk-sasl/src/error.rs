//! What can go wrong in an exchange; every one of them is ZooKeeper's `AuthFailed` on the wire.

/// Why a SASL exchange failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    /// The peer's token is not what the mechanism allows at this step.
    #[error("malformed SASL token: {0}")]
    Malformed(String),
    /// The peer asked for something rzk does not do (a protection layer, another algorithm).
    #[error("unsupported by rzk's SASL: {0}")]
    Unsupported(String),
    /// The server does not know the user, or the password does not match.
    #[error("the user name or password is wrong")]
    BadCredentials,
    /// The server's proof of the password (`rspauth`) is wrong: it is not the server the
    /// credentials were made for.
    #[error("the server could not prove it knows the password (rspauth mismatch)")]
    ServerNotVerified,
    /// A token after the exchange ended, or none where one was due.
    #[error("SASL exchange out of step: {0}")]
    OutOfStep(&'static str),
    /// A JAAS configuration that cannot be used.
    #[error("{0}")]
    Jaas(String),
}
