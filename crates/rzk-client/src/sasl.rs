//! SASL on the client, with no I/O: the login a [`crate::Connector`] is given, and one
//! connection's exchange as frames in and frames out. ZooKeeper keeps a SASL identity per
//! connection, not per session, so every connection runs a fresh exchange, right after the
//! handshake and before anything else is sent (the Java client holds every other packet,
//! pings included, until it ends: an enforcing server closes the connection on any of them).

use rzk_proto::jute::Reader;
use rzk_proto::{ReplyHeader, Request};
use rzk_sasl::{ClientLogin, ClientStep, DigestMd5Client, Jaas, SaslError};

use crate::Error;

/// The JAAS section a ZooKeeper client logs in with unless told otherwise
/// (`zookeeper.sasl.clientconfig`).
pub const JAAS_CLIENT_SECTION: &str = "Client";
/// Packets one exchange may send; DIGEST-MD5 needs two, GSSAPI a handful.
const SASL_STEPS_MAX: usize = 8;

/// How a session authenticates with SASL on every connection.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslLogin(Login);

#[derive(Clone, PartialEq, Eq)]
enum Login {
    DigestMd5 { username: String, password: String },
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Login::DigestMd5 { username, .. } => f
                .debug_struct("SaslLogin")
                .field("mechanism", &"DIGEST-MD5")
                .field("username", username)
                .finish_non_exhaustive(),
        }
    }
}

impl SaslLogin {
    /// DIGEST-MD5 as `username` with `password`: a user of the server's JAAS `Server`
    /// section (`user_NAME="password"`).
    pub fn digest_md5(username: impl Into<String>, password: impl Into<String>) -> SaslLogin {
        SaslLogin(Login::DigestMd5 { username: username.into(), password: password.into() })
    }

    /// The login of JAAS section `section` ([`JAAS_CLIENT_SECTION`] for ZooKeeper's default),
    /// the file a Java client reads through `java.security.auth.login.config`.
    ///
    /// # Errors
    /// [`Error::SaslAuthFailed`] when the section is missing or unusable, and for a Kerberos
    /// section: rzk-client does not speak GSSAPI yet.
    pub fn from_jaas(jaas: &Jaas, section: &str) -> Result<SaslLogin, Error> {
        match jaas.client_login(section).map_err(|e| failed("JAAS", &e))? {
            ClientLogin::Digest { username, password } => {
                Ok(SaslLogin::digest_md5(username, password))
            }
            ClientLogin::Kerberos { .. } => Err(Error::SaslAuthFailed {
                mechanism: "GSSAPI",
                reason: format!(
                    "the JAAS `{section}` section logs in with Kerberos, which rzk-client does \
                     not speak yet; use a DIGEST-MD5 section"
                ),
            }),
        }
    }

    /// The mechanism's IANA name.
    pub fn mechanism(&self) -> &'static str {
        match self.0 {
            Login::DigestMd5 { .. } => "DIGEST-MD5",
        }
    }

    /// A fresh exchange for one connection; `cnonce` is 16 fresh random bytes.
    pub(crate) fn start(&self, cnonce: [u8; 16]) -> Exchange {
        let hex: String = cnonce.iter().map(|b| format!("{b:02x}")).collect();
        let mechanism = match &self.0 {
            Login::DigestMd5 { username, password } => {
                DigestMd5Client::new(username, password, hex)
            }
        };
        Exchange { mechanism, name: self.mechanism(), xid: 0, steps: 0 }
    }
}

fn failed(mechanism: &'static str, e: &SaslError) -> Error {
    Error::SaslAuthFailed { mechanism, reason: e.to_string() }
}

/// One connection's exchange: the frames to send, and what each reply means.
pub(crate) struct Exchange {
    mechanism: DigestMd5Client,
    name: &'static str,
    /// The exchange's own xids count from 1, as kazoo's do: the server only echoes them, and
    /// the session's requests, which follow the exchange, are numbered apart.
    xid: i32,
    steps: usize,
}

impl Exchange {
    /// The first frame (its length prefix included).
    pub fn first(&mut self) -> Vec<u8> {
        let token = self.mechanism.initial();
        self.frame(token)
    }

    fn frame(&mut self, token: Vec<u8>) -> Vec<u8> {
        self.xid += 1;
        self.steps += 1;
        Request::Sasl { token }.to_frame(self.xid)
    }

    /// The server's reply (a frame body): the next frame to send, or `None` once the
    /// exchange is complete.
    ///
    /// # Errors
    /// [`Error::SaslAuthFailed`] when the server refused the client (it closes the
    /// connection after saying so) or the mechanism cannot go on: the session is over, as
    /// in the Java client. [`Error::Protocol`] for a frame that is not a reply to the
    /// exchange: the connection is out of step.
    pub fn on_reply(&mut self, frame: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let mut r = Reader::new(frame);
        let header = ReplyHeader::read(&mut r).map_err(|e| Error::Protocol(e.to_string()))?;
        if header.xid != self.xid {
            return Err(Error::Protocol(format!(
                "xid {} during the SASL exchange, whose last packet was {}",
                header.xid, self.xid
            )));
        }
        if header.err != 0 {
            let reason = match Error::from_code(header.err) {
                Some(Error::AuthFailed) => "the server rejected the credentials".to_owned(),
                Some(Error::SessionClosedRequireAuth) => {
                    "the server rejected the credentials and requires SASL".to_owned()
                }
                e => format!("the server answered {e:?}"),
            };
            return Err(Error::SaslAuthFailed { mechanism: self.name, reason });
        }
        let token = r.read_buffer_opt().map_err(|e| Error::Protocol(e.to_string()))?;
        match self.mechanism.step(token.as_deref()).map_err(|e| failed(self.name, &e))? {
            ClientStep::Complete => Ok(None),
            ClientStep::Send(_) if self.steps == SASL_STEPS_MAX => Err(Error::SaslAuthFailed {
                mechanism: self.name,
                reason: format!("no end after {SASL_STEPS_MAX} packets"),
            }),
            ClientStep::Send(next) => Ok(Some(self.frame(next))),
        }
    }
}
