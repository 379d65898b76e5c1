//! A SASL mechanism the shell provides: one whose steps the core cannot take itself, because
//! they need a system library (GSSAPI: the Kerberos acceptor and its keytab). The core owns
//! the exchange's place in the protocol (when a sasl packet may come, what a failure closes,
//! which id success adds); the mechanism only turns each client token into the next server
//! token. A simulation configures none, and the core stays deterministic.
//!
//! A mechanism's step must not wait on the network: it runs on the core's thread. A Kerberos
//! acceptor reads its keytab and decrypts the client's ticket, and never calls the KDC.

use std::sync::{Arc, Mutex};

/// What one step of an exchange produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExchangeStep {
    /// The next server token; the exchange goes on.
    Challenge(Vec<u8>),
    /// The client is authenticated as `id` (the connection's `sasl` id); `token`, if any, is
    /// the last one to send (GSSAPI ends with none).
    Authenticated {
        /// The last server token.
        token: Option<Vec<u8>>,
        /// The authenticated identity.
        id: String,
    },
}

/// One connection's exchange.
pub trait SaslExchange: Send {
    /// Takes the client's `token`.
    ///
    /// # Errors
    /// Why the client is refused, for the log: the connection is then closed.
    fn step(&mut self, token: &[u8]) -> Result<ExchangeStep, String>;
}

/// A mechanism: a new exchange for each connection that starts one.
pub trait SaslMechanism: Send + Sync {
    /// The mechanism's SASL name, for logs (`GSSAPI`).
    fn name(&self) -> &'static str;

    /// A new exchange.
    ///
    /// # Errors
    /// Why none can start (no acceptor credentials): the client is refused.
    fn start(&self) -> Result<Box<dyn SaslExchange>, String>;
}

/// A [`SaslMechanism`] in the core's configuration: compared by identity, shown by name.
#[derive(Clone)]
pub struct MechanismRef(pub Arc<dyn SaslMechanism>);

impl std::fmt::Debug for MechanismRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

impl PartialEq for MechanismRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for MechanismRef {}

/// A connection's exchange in the core's records, which are cloneable: the clones share it
/// (only the core steps it, one packet at a time).
#[derive(Clone)]
pub(crate) struct SharedExchange(pub Arc<Mutex<Box<dyn SaslExchange>>>);

impl std::fmt::Debug for SharedExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SaslExchange")
    }
}
