//! The client's side: an empty first token, the digest-response to the server's challenge,
//! and the check of the server's `rspauth`.

use crate::directives::{Directives, Writer};
use crate::{ClientStep, SaslError};

use super::sums::{same, Exchange, Side, DIGEST_URI, NONCE_COUNT};

enum State {
    Start,
    Challenged,
    /// The `rspauth` the server must send.
    Responded(String),
    Done,
}

/// One connection's DIGEST-MD5 exchange as a client.
pub struct DigestMd5Client {
    username: String,
    password: String,
    cnonce: String,
    state: State,
}

impl std::fmt::Debug for DigestMd5Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestMd5Client").field("username", &self.username).finish_non_exhaustive()
    }
}

impl DigestMd5Client {
    /// An exchange for `username` and `password`; `cnonce` is the client's nonce for this
    /// exchange, fresh and unpredictable (the caller draws it: this crate does no I/O).
    pub fn new(username: &str, password: &str, cnonce: String) -> DigestMd5Client {
        DigestMd5Client {
            username: username.to_owned(),
            password: password.to_owned(),
            cnonce,
            state: State::Start,
        }
    }

    /// The token to send first: empty, because DIGEST-MD5 starts with the server's
    /// challenge (the Java client and kazoo send the same empty token).
    pub fn initial(&mut self) -> Vec<u8> {
        self.state = State::Challenged;
        Vec::new()
    }

    /// The server's next token (`None` for a null one).
    ///
    /// # Errors
    /// [`SaslError::Malformed`] or [`SaslError::Unsupported`] for a challenge rzk cannot
    /// answer, [`SaslError::ServerNotVerified`] for a wrong `rspauth`, and
    /// [`SaslError::OutOfStep`] for a token before [`Self::initial`], after the end, or a
    /// null token where a challenge was due (a server with no SASL configured sends one).
    pub fn step(&mut self, token: Option<&[u8]>) -> Result<ClientStep, SaslError> {
        let state = std::mem::replace(&mut self.state, State::Done);
        match (state, token) {
            (State::Challenged, Some(challenge)) => {
                let (response, expected) = self.respond(challenge)?;
                self.state = State::Responded(expected);
                Ok(ClientStep::Send(response))
            }
            (State::Responded(expected), Some(token)) => {
                let d = Directives::parse(token)?;
                match d.one("rspauth")? {
                    Some(got) if same(got, &expected) => Ok(ClientStep::Complete),
                    Some(_) => Err(SaslError::ServerNotVerified),
                    None => {
                        Err(SaslError::Malformed("no rspauth in the server's last token".into()))
                    }
                }
            }
            (State::Challenged | State::Responded(_), None) => Err(SaslError::OutOfStep(
                "the server ended the exchange without authenticating the client (is SASL \
                 configured on it?)",
            )),
            (State::Start, _) => Err(SaslError::OutOfStep("a token before the first")),
            (State::Done, _) => Err(SaslError::OutOfStep("a token after the exchange ended")),
        }
    }

    /// The digest-response to `challenge`, and the rspauth it calls for.
    fn respond(&self, challenge: &[u8]) -> Result<(Vec<u8>, String), SaslError> {
        let d = Directives::parse(challenge)?;
        let nonce = d.required("nonce")?;
        if d.required("algorithm")? != "md5-sess" {
            return Err(SaslError::Unsupported("an algorithm other than md5-sess".into()));
        }
        let qop = d.one("qop")?.unwrap_or("auth");
        if !qop.split(',').any(|q| q.trim() == "auth") {
            return Err(SaslError::Unsupported(format!(
                "qop `{qop}`: rzk authenticates only, with no integrity or privacy layer"
            )));
        }
        let utf8 = match d.one("charset")? {
            None => false,
            Some(c) if c.eq_ignore_ascii_case("utf-8") => true,
            Some(c) => return Err(SaslError::Malformed(format!("charset `{c}`"))),
        };
        if !utf8 && !(self.username.chars().chain(self.password.chars())).all(|c| c <= '\u{ff}') {
            return Err(SaslError::Unsupported(
                "a user name or password outside ISO 8859-1 with a server that does not take \
                 UTF-8"
                    .into(),
            ));
        }
        // The first realm offered, or none: ZooKeeper's server offers exactly its own.
        let offered = d.all("realm").next();
        let realm = offered.unwrap_or("");
        let x = Exchange {
            username: &self.username,
            realm,
            password: &self.password,
            nonce,
            cnonce: &self.cnonce,
            authzid: None,
            digest_uri: DIGEST_URI,
        };
        let mut w = Writer::default();
        if utf8 {
            w = w.token("charset", "utf-8");
        }
        w = w.quoted("username", &self.username);
        if let Some(realm) = offered {
            w = w.quoted("realm", realm);
        }
        let token = w
            .quoted("nonce", nonce)
            .token("nc", NONCE_COUNT)
            .quoted("cnonce", &self.cnonce)
            .quoted("digest-uri", DIGEST_URI)
            .token("response", &x.value(Side::Response))
            .token("qop", "auth")
            .finish();
        Ok((token, x.value(Side::RspAuth)))
    }
}
