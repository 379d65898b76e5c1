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
    Gssapi(Kerberos),
}

/// A Kerberos login: whose credentials, and which server principal to ask a ticket for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kerberos {
    principal: Option<String>,
    /// `zookeeper.sasl.client.username`: the service part of the server's principal.
    service: String,
    /// `zookeeper.server.principal`: the server's whole principal, instead of
    /// `service@<connect-string host>`.
    server_principal: Option<String>,
}

/// The service ZooKeeper's servers run as unless told otherwise
/// (`zookeeper.sasl.client.username`).
pub const DEFAULT_SASL_SERVICE: &str = "zookeeper";

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Login::DigestMd5 { username, .. } => f
                .debug_struct("SaslLogin")
                .field("mechanism", &"DIGEST-MD5")
                .field("username", username)
                .finish_non_exhaustive(),
            Login::Gssapi(k) => f
                .debug_struct("SaslLogin")
                .field("mechanism", &"GSSAPI")
                .field("kerberos", k)
                .finish(),
        }
    }
}

impl SaslLogin {
    /// DIGEST-MD5 as `username` with `password`: a user of the server's JAAS `Server`
    /// section (`user_NAME="password"`).
    pub fn digest_md5(username: impl Into<String>, password: impl Into<String>) -> SaslLogin {
        SaslLogin(Login::DigestMd5 { username: username.into(), password: password.into() })
    }

    /// GSSAPI (Kerberos) with the credentials the system's Kerberos library finds: the ticket
    /// cache (`KRB5CCNAME`, as after `kinit`) or the client keytab (`KRB5_CLIENT_KTNAME`),
    /// for `principal` if given. The server's principal is `zookeeper/<host>`, the host of the
    /// connect string as krb5.conf canonicalises it, unless [`SaslLogin::with_service`] or
    /// [`SaslLogin::with_server_principal`] say otherwise. Needs the `gssapi` feature; without
    /// it every connection fails with [`Error::SaslAuthFailed`] saying so.
    pub fn gssapi(principal: Option<String>) -> SaslLogin {
        SaslLogin(Login::Gssapi(Kerberos {
            principal,
            service: DEFAULT_SASL_SERVICE.to_owned(),
            server_principal: None,
        }))
    }

    /// The service part of the server's principal (`zookeeper.sasl.client.username`); GSSAPI
    /// only.
    pub fn with_service(mut self, service: impl Into<String>) -> SaslLogin {
        if let Login::Gssapi(k) = &mut self.0 {
            k.service = service.into();
        }
        self
    }

    /// The server's whole principal (`zookeeper.server.principal`, e.g.
    /// `zookeeper/zk1.example.com@EXAMPLE.COM`), for every host; GSSAPI only.
    pub fn with_server_principal(mut self, principal: impl Into<String>) -> SaslLogin {
        if let Login::Gssapi(k) = &mut self.0 {
            k.server_principal = Some(principal.into());
        }
        self
    }

    /// The login of JAAS section `section` ([`JAAS_CLIENT_SECTION`] for ZooKeeper's default),
    /// the file a Java client reads through `java.security.auth.login.config`. A Kerberos
    /// section's principal is taken; its keytab is not, since the Kerberos library reads a
    /// client keytab only from `KRB5_CLIENT_KTNAME` (the rzk CLI sets that from the section).
    ///
    /// # Errors
    /// [`Error::SaslAuthFailed`] when the section is missing or unusable.
    pub fn from_jaas(jaas: &Jaas, section: &str) -> Result<SaslLogin, Error> {
        match jaas.client_login(section).map_err(|e| failed("JAAS", &e.to_string()))? {
            ClientLogin::Digest { username, password } => {
                Ok(SaslLogin::digest_md5(username, password))
            }
            ClientLogin::Kerberos { principal, .. } => Ok(SaslLogin::gssapi(principal)),
        }
    }

    /// Whether its exchange's steps may block the thread (GSSAPI's reach the KDC).
    pub(crate) fn blocks(&self) -> bool {
        matches!(self.0, Login::Gssapi(_))
    }

    /// The mechanism's IANA name.
    pub fn mechanism(&self) -> &'static str {
        match self.0 {
            Login::DigestMd5 { .. } => "DIGEST-MD5",
            Login::Gssapi(_) => "GSSAPI",
        }
    }

    /// A fresh exchange for one connection to `host` (the connect string's, without its
    /// port); `cnonce` is 16 fresh random bytes. GSSAPI's may block: it acquires credentials.
    ///
    /// # Errors
    /// [`Error::SaslAuthFailed`] when GSSAPI has no credentials or was not built in.
    pub(crate) fn start(&self, host: &str, cnonce: [u8; 16]) -> Result<Exchange, Error> {
        let name = self.mechanism();
        let mechanism = match &self.0 {
            Login::DigestMd5 { username, password } => {
                let cnonce = rzk_sasl::hex(&cnonce);
                Mechanism::DigestMd5(DigestMd5Client::new(username, password, cnonce))
            }
            Login::Gssapi(k) => kerberos(k, host).map_err(|e| failed(name, &e))?,
        };
        Ok(Exchange { mechanism, name, xid: 0, steps: 0 })
    }
}

#[cfg(feature = "gssapi")]
fn kerberos(k: &Kerberos, host: &str) -> Result<Mechanism, String> {
    use crate::gssapi::{GssapiClient, Target};
    let target = match &k.server_principal {
        Some(p) => Target::Principal(p),
        None => Target::Service { service: &k.service, host },
    };
    GssapiClient::new(k.principal.as_deref(), &target).map(Mechanism::Gssapi)
}

#[cfg(not(feature = "gssapi"))]
fn kerberos(_: &Kerberos, _: &str) -> Result<Mechanism, String> {
    Err("this build has no Kerberos: rebuild with the `gssapi` feature (it needs libkrb5-dev \
         and libclang)"
        .into())
}

fn failed(mechanism: &'static str, reason: &str) -> Error {
    Error::SaslAuthFailed { mechanism, reason: reason.to_owned() }
}

/// The mechanism an exchange runs.
enum Mechanism {
    DigestMd5(DigestMd5Client),
    #[cfg(feature = "gssapi")]
    Gssapi(crate::gssapi::GssapiClient),
}

impl Mechanism {
    fn initial(&mut self) -> Result<Vec<u8>, String> {
        match self {
            Mechanism::DigestMd5(m) => Ok(m.initial()),
            #[cfg(feature = "gssapi")]
            Mechanism::Gssapi(m) => m.initial(),
        }
    }

    fn step(&mut self, token: Option<&[u8]>) -> Result<ClientStep, String> {
        match self {
            Mechanism::DigestMd5(m) => m.step(token).map_err(|e: SaslError| e.to_string()),
            #[cfg(feature = "gssapi")]
            Mechanism::Gssapi(m) => m.step(token),
        }
    }
}

/// One connection's exchange: the frames to send, and what each reply means.
pub(crate) struct Exchange {
    mechanism: Mechanism,
    name: &'static str,
    /// The exchange's own xids count from 1, as kazoo's do: the server only echoes them, and
    /// the session's requests, which follow the exchange, are numbered apart.
    xid: i32,
    steps: usize,
}

impl Exchange {
    /// The first frame (its length prefix included).
    ///
    /// # Errors
    /// [`Error::SaslAuthFailed`] when the mechanism cannot start.
    pub fn first(&mut self) -> Result<Vec<u8>, Error> {
        let token = self.mechanism.initial().map_err(|e| failed(self.name, &e))?;
        Ok(self.frame(token))
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

#[cfg(test)]
mod tests {
    use rzk_proto::jute::Writer;

    use super::*;

    /// A reply frame body: header, then a SetSASLResponse token (`None`: null).
    fn reply(xid: i32, err: i32, token: Option<&[u8]>) -> Vec<u8> {
        let mut w = Writer::new();
        ReplyHeader { xid, zxid: 0, err }.write(&mut w);
        w.buffer_opt(token);
        w.into_inner()
    }

    fn exchange() -> Exchange {
        SaslLogin::digest_md5("bob", "pw").start("127.0.0.1", [7; 16]).unwrap()
    }

    const CHALLENGE: &[u8] = br#"realm="zk-sasl-md5",nonce="n",charset=utf-8,algorithm=md5-sess"#;

    #[test]
    fn each_packet_has_the_next_xid_and_an_answer_of_another_is_out_of_step() {
        let mut x = exchange();
        let first = x.first().unwrap();
        assert_eq!(first[4..8], 1i32.to_be_bytes(), "xid 1");
        let second = x.on_reply(&reply(1, 0, Some(CHALLENGE))).unwrap().expect("a response");
        assert_eq!(second[4..8], 2i32.to_be_bytes(), "xid 2");
        assert!(matches!(x.on_reply(&reply(5, 0, None)), Err(Error::Protocol(_))));
    }

    #[test]
    fn a_refusal_or_a_null_challenge_ends_the_session_with_the_reason() {
        let mut x = exchange();
        x.first().unwrap();
        let err = x.on_reply(&reply(1, -124, None)).unwrap_err();
        assert!(err.is_terminal(), "{err:?}");
        assert!(err.to_string().contains("requires SASL"), "{err}");
        let mut x = exchange();
        x.first().unwrap();
        let err = x.on_reply(&reply(1, 0, None)).unwrap_err();
        assert!(matches!(&err, Error::SaslAuthFailed { mechanism: "DIGEST-MD5", .. }), "{err:?}");
        assert!(err.to_string().contains("is SASL configured"), "{err}");
    }

    #[test]
    fn a_debug_print_keeps_the_password() {
        let login = SaslLogin::digest_md5("bob", "hunter2");
        assert!(!format!("{login:?}").contains("hunter2"));
        assert_eq!(login.mechanism(), "DIGEST-MD5");
    }

    #[cfg(not(feature = "gssapi"))]
    #[test]
    fn kerberos_without_the_feature_says_how_to_get_it() {
        let err = SaslLogin::gssapi(None).start("h", [0; 16]).err().expect("refused");
        assert!(err.to_string().contains("`gssapi` feature"), "{err}");
    }
}
