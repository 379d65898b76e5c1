//! How to connect, and the timing of the lease.

use std::sync::Arc;
use std::time::Duration;

use rzk_client::{SaslLogin, Transport};

use crate::session::acl_provider::{AclProvider, SharedProvider};
use crate::tls::TlsConfig;

/// How to connect, and the timing of the lease (docs/election.md §2.1, §2.2).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// The connect string: `host:port[,host:port...][/chroot]`.
    pub hosts: String,
    /// The session timeout to request. The server clamps it to [2, 20] × tickTime; every
    /// timing below is derived from the negotiated value `T`. Default 6 s.
    pub session_timeout: Duration,
    /// The client's idle timeout before it declares the connection lost (Curator's
    /// Suspended). Default: the library's, `2/5·T`.
    pub connection_timeout: Option<Duration>,
    /// Bound on the first connect of [`Session::connect`](crate::session::Session::connect). Default 10 s.
    pub connect_timeout: Duration,
    /// Period of the lease heartbeat (a `exists /`). Default `T/6`.
    pub heartbeat: Option<Duration>,
    /// Subtracted from `last_ack_sent + T` to get the lease deadline. Default
    /// `max(T/10, 200 ms)`, floor 50 ms.
    pub safety_margin: Option<Duration>,
    /// Declare the session lost when disconnected past the lease deadline, without waiting for
    /// the server (Curator's simulated expiry, measured from the last acknowledged request
    /// instead of from Suspended). Default true.
    pub simulate_expiry: bool,
    /// Connect over TLS, trusting and presenting these; `None` (the default) connects in
    /// plain text.
    pub tls: Option<TlsConfig>,
    /// Credentials sent on every connection of every session, the ones rebuilt after an
    /// expiry included, before any request (Curator's `authorization`, kazoo's `auth_data`).
    pub auth: Vec<Credential>,
    /// The SASL login every connection of every session runs first, if any.
    pub sasl: Option<SaslLogin>,
    /// The ACL of the nodes the recipes create, unless a recipe is given its own: Curator's
    /// `ACLProvider`. Default [`crate::session::OpenAclProvider`].
    pub(crate) acl_provider: SharedProvider,
    /// How connections are opened, when not by TCP or [`SessionConfig::tls`].
    pub(crate) transport: Option<SharedTransport>,
}

/// A [`Transport`] kept in a configuration that is `Debug` and `Clone`.
#[derive(Clone)]
pub(crate) struct SharedTransport(pub Arc<dyn Transport>);

impl std::fmt::Debug for SharedTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transport")
    }
}

/// One credential: a scheme and its scheme-specific bytes (`digest`, `user:password`).
/// Its `Debug` shows the scheme only, so a logged configuration keeps the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The scheme, e.g. `digest`.
    pub scheme: String,
    /// What the scheme takes, e.g. `user:password` for `digest`.
    pub auth: Vec<u8>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential").field("scheme", &self.scheme).finish_non_exhaustive()
    }
}

impl SessionConfig {
    /// Defaults for the given connect string.
    pub fn new(hosts: impl Into<String>) -> Self {
        SessionConfig {
            hosts: hosts.into(),
            session_timeout: Duration::from_secs(6),
            connection_timeout: None,
            connect_timeout: Duration::from_secs(10),
            heartbeat: None,
            safety_margin: None,
            simulate_expiry: true,
            tls: None,
            auth: Vec::new(),
            sasl: None,
            acl_provider: SharedProvider::default(),
            transport: None,
        }
    }

    /// Sets the requested session timeout.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Sets the bound on the first connect.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the library's idle timeout.
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = Some(timeout);
        self
    }

    /// Sets the heartbeat period.
    pub fn with_heartbeat(mut self, period: Duration) -> Self {
        self.heartbeat = Some(period);
        self
    }

    /// Sets the safety margin (floor 50 ms).
    pub fn with_safety_margin(mut self, margin: Duration) -> Self {
        self.safety_margin = Some(margin);
        self
    }

    /// Turns simulated expiry on or off.
    pub fn with_simulate_expiry(mut self, on: bool) -> Self {
        self.simulate_expiry = on;
        self
    }

    /// Adds a credential (any number): `scheme` and its bytes, e.g. `("digest",
    /// "user:password")`, sent before anything else on every connection of every session.
    pub fn with_auth(mut self, scheme: impl Into<String>, auth: impl Into<Vec<u8>>) -> Self {
        self.auth.push(Credential { scheme: scheme.into(), auth: auth.into() });
        self
    }

    /// Authenticates every connection of every session with SASL (DIGEST-MD5, from a JAAS
    /// `Client` section with [`SaslLogin::from_jaas`]) before anything else; a refusal is
    /// [`crate::Error::AuthFailed`], naming the mechanism.
    pub fn with_sasl(mut self, login: SaslLogin) -> Self {
        self.sasl = Some(login);
        self
    }

    /// Names the ACL of every node the recipes create, by its path, unless a recipe is given
    /// its own with `with_acls` (Curator's `aclProvider`): [`crate::session::CreatorOnlyAclProvider`]
    /// keeps every other identity out of this application's locks and elections.
    pub fn with_acl_provider(mut self, provider: impl AclProvider) -> Self {
        self.acl_provider = SharedProvider(Arc::new(provider));
        self
    }

    /// Connects over TLS to every host of the connect string (their secure client ports).
    pub fn with_tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Opens every connection of every session with `transport` (rzk-client's
    /// `Connector::with_transport`): a proxy, or the in-memory network of a simulated world.
    /// It takes the place of TCP and of [`SessionConfig::with_tls`].
    pub fn with_transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(SharedTransport(transport));
        self
    }

    pub(crate) fn margin_for(&self, t: Duration) -> Duration {
        self.safety_margin
            .unwrap_or_else(|| (t / 10).max(Duration::from_millis(200)))
            .max(Duration::from_millis(50))
    }

    pub(crate) fn heartbeat_for(&self, t: Duration) -> Duration {
        self.heartbeat.unwrap_or(t / 6).max(Duration::from_millis(10))
    }
}
