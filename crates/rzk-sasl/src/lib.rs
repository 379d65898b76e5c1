//! The SASL ZooKeeper speaks, with no I/O, for rzk-client and rzk server alike: each
//! mechanism takes the peer's token and gives the next one to send, so an exchange runs the
//! same over a socket, in a test, or in a seeded simulation. Randomness (the nonces) comes
//! from the caller.

mod digest_md5;
mod directives;
mod error;
mod jaas;

pub use digest_md5::{
    hex, DigestMd5Client, DigestMd5Server, ServerStep, DIGEST_URI, SERVER_NAME, SERVICE,
};
pub use directives::{DIRECTIVES_MAX, TOKEN_BYTES_MAX};
pub use error::SaslError;
pub use jaas::{
    ClientLogin, Jaas, LoginModule, ServerLogin, DIGEST_LOGIN_MODULE, JAAS_BYTES_MAX,
    KRB5_LOGIN_MODULE,
};

/// What a client sends after a server token.
#[derive(Debug, PartialEq, Eq)]
pub enum ClientStep {
    /// This token; the exchange goes on.
    Send(Vec<u8>),
    /// Authenticated: nothing more to send.
    Complete,
}
