//! The server's side: the challenge, then the check of the client's digest-response against
//! the password the caller looks up, and `rspauth` in answer.

use crate::directives::{Directives, Writer};
use crate::SaslError;

use super::sums::{same, Exchange, Side, DIGEST_URI, NONCE_COUNT, SERVER_NAME};

/// What the server sends after a client token.
#[derive(Debug, PartialEq, Eq)]
pub enum ServerStep {
    /// The next challenge; the exchange goes on.
    Challenge(Vec<u8>),
    /// The client proved its password: `token` (the `rspauth`) is the last to send, and `id`
    /// the user it authenticated as.
    Authenticated { token: Vec<u8>, id: String },
}

#[derive(Clone)]
enum State {
    Start,
    Challenged,
    Done,
}

/// One connection's DIGEST-MD5 exchange as a server, in ZooKeeper's realm `zk-sasl-md5`.
#[derive(Clone)]
pub struct DigestMd5Server {
    nonce: String,
    state: State,
}

impl std::fmt::Debug for DigestMd5Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestMd5Server").finish_non_exhaustive()
    }
}

impl DigestMd5Server {
    /// An exchange whose challenge carries `nonce`: fresh and unpredictable for each
    /// exchange, drawn by the caller. It must need no quoting (hex or base64 does not).
    pub fn new(nonce: String) -> DigestMd5Server {
        DigestMd5Server { nonce, state: State::Start }
    }

    /// The client's next token; `password_of` gives a user's password, `None` for an
    /// unknown user.
    ///
    /// # Errors
    /// [`SaslError::BadCredentials`] for an unknown user or a wrong password;
    /// [`SaslError::Malformed`], [`SaslError::Unsupported`] or [`SaslError::OutOfStep`] for a
    /// token that does not follow RFC 2831 as ZooKeeper uses it (a first token is ignored,
    /// whatever it holds). After an error the exchange
    /// is over.
    pub fn step(
        &mut self,
        token: &[u8],
        password_of: impl FnOnce(&str) -> Option<String>,
    ) -> Result<ServerStep, SaslError> {
        match std::mem::replace(&mut self.state, State::Done) {
            // A first token is ignored, as Java's DIGEST-MD5 server ignores it: the mechanism
            // has no initial response (subsequent authentication is not offered).
            State::Start => {
                self.state = State::Challenged;
                Ok(ServerStep::Challenge(
                    Writer::default()
                        .quoted("realm", SERVER_NAME)
                        .quoted("nonce", &self.nonce)
                        .token("charset", "utf-8")
                        .token("algorithm", "md5-sess")
                        .finish(),
                ))
            }
            State::Challenged => self.verify(token, password_of),
            State::Done => Err(SaslError::OutOfStep("a token after the exchange ended")),
        }
    }

    fn verify(
        &self,
        token: &[u8],
        password_of: impl FnOnce(&str) -> Option<String>,
    ) -> Result<ServerStep, SaslError> {
        let d = Directives::parse(token)?;
        let username = d.required("username")?;
        let realm = d.one("realm")?.unwrap_or("");
        if !realm.is_empty() && realm != SERVER_NAME {
            return Err(SaslError::Malformed(format!("realm `{realm}`, not {SERVER_NAME}")));
        }
        if !same(d.required("nonce")?, &self.nonce) {
            return Err(SaslError::Malformed("a nonce this server did not send".into()));
        }
        if d.required("nc")? != NONCE_COUNT {
            return Err(SaslError::Unsupported("subsequent authentication (nc above 1)".into()));
        }
        if d.one("qop")?.is_some_and(|q| q != "auth") {
            return Err(SaslError::Unsupported("a qop other than auth".into()));
        }
        let digest_uri = d.required("digest-uri")?;
        if !digest_uri.eq_ignore_ascii_case(DIGEST_URI) {
            return Err(SaslError::Malformed(format!("digest-uri `{digest_uri}`")));
        }
        let cnonce = d.required("cnonce")?;
        let response = d.required("response")?;
        let password = password_of(username).ok_or(SaslError::BadCredentials)?;
        let x = Exchange {
            username,
            realm,
            password: &password,
            nonce: &self.nonce,
            cnonce,
            authzid: d.one("authzid")?,
            digest_uri,
        };
        if !same(response, &x.value(Side::Response)) {
            return Err(SaslError::BadCredentials);
        }
        let token = Writer::default().token("rspauth", &x.value(Side::RspAuth)).finish();
        Ok(ServerStep::Authenticated { token, id: username.to_owned() })
    }
}
