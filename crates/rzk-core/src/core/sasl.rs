//! The sasl packet: one step of a connection's exchange (the core's DIGEST-MD5, or the shell's
//! mechanism, GSSAPI), answered as ZooKeeper's `processSasl` answers it. Success adds the `sasl:<user>` id (and `super` for the
//! configured super user); any failure answers AuthFailed (-124 when sasl is an enforced
//! scheme) with no token and closes the connection, never touching another.
//!
//! The exchange is bounded in size by rzk-sasl's token limits, in steps by the mechanism
//! (two packets, then any other fails), and in time by the session: a client that stalls
//! mid-exchange sends no pings, so its session expires and the connection closes with it.

use rzk_proto::jute::Writer;
use rzk_proto::{ErrorCode, Id, ReplyHeader, Response};
use std::sync::{Arc, Mutex, PoisonError};

use rzk_sasl::{DigestMd5Server, ServerStep};

use crate::sasl_mechanism::{ExchangeStep, SharedExchange};
use crate::watches::ConnId;

use super::interface::CloseReason;
use super::records::ConnSasl;
use super::Core;

impl Core {
    /// A sasl packet with `token` on `conn`.
    pub(super) fn sasl(&mut self, conn: ConnId, xid: i32, token: &[u8]) {
        let external = self.config.sasl_mechanism.clone();
        if self.config.sasl_users.0.is_empty() && external.is_none() {
            // ZooKeeper with no JAAS `Server` section: OK with a null token, which ends a
            // Java client's exchange in AuthFailed and leaves the connection as it was.
            self.send(conn, sasl_reply(xid, ErrorCode::Ok, None));
            return;
        }
        let fresh = self.conns.get(&conn).expect("caller checked").sasl.is_none();
        let start = match (fresh, &external) {
            (false, _) => None,
            (true, Some(m)) => match m.0.start() {
                Ok(e) => Some(ConnSasl::External(SharedExchange(Arc::new(Mutex::new(e))))),
                Err(_) => return self.refuse(conn, xid),
            },
            (true, None) => {
                Some(ConnSasl::Digest(DigestMd5Server::new(self.passwords.sasl_nonce(conn))))
            }
        };
        let users = &self.config.sasl_users.0;
        let c = self.conns.get_mut(&conn).expect("caller checked");
        if start.is_some() {
            c.sasl = start;
        }
        let step = match c.sasl.as_mut().expect("set above") {
            ConnSasl::Digest(exchange) => match exchange.step(token, |u| users.get(u).cloned()) {
                Ok(ServerStep::Challenge(challenge)) => Ok(ExchangeStep::Challenge(challenge)),
                Ok(ServerStep::Authenticated { token, id }) => {
                    Ok(ExchangeStep::Authenticated { token: Some(token), id })
                }
                Err(e) => Err(e.to_string()),
            },
            ConnSasl::External(exchange) => {
                exchange.0.lock().unwrap_or_else(PoisonError::into_inner).step(token)
            }
        };
        match step {
            Ok(ExchangeStep::Challenge(challenge)) => {
                self.send(conn, sasl_reply(xid, ErrorCode::Ok, Some(challenge)));
            }
            Ok(ExchangeStep::Authenticated { token, id }) => {
                let is_super = self.config.sasl_super_user.as_deref() == Some(id.as_str());
                self.authenticated(conn, Id::new("sasl", id));
                if is_super {
                    self.authenticated(conn, Id::new("super", ""));
                }
                self.send(conn, sasl_reply(xid, ErrorCode::Ok, token));
            }
            Err(_) => self.refuse(conn, xid),
        }
    }

    /// A failed exchange: AuthFailed (-124 when sasl is enforced) with a null token, and the
    /// connection closed.
    fn refuse(&mut self, conn: ConnId, xid: i32) {
        self.counters.sasl_failures += 1;
        let required = self.config.enforced_auth_schemes.iter().any(|s| s == "sasl");
        let err =
            if required { ErrorCode::SessionClosedRequireSaslAuth } else { ErrorCode::AuthFailed };
        self.send(conn, sasl_reply(xid, err, None));
        self.close(conn, CloseReason::SaslAuthFailed);
    }
}

/// A reply to a sasl packet: zxid 0, as ZooKeeper's (the exchange is no transaction), and
/// `SetSASLResponse` with the token, if any. An error reply has the body too, with a null
/// token, unlike any other: the Java client reads one before it looks at the error, and
/// without it sees a broken frame (connection loss and a retry) instead of AuthFailed.
fn sasl_reply(xid: i32, err: ErrorCode, token: Option<Vec<u8>>) -> Vec<u8> {
    let mut w = Writer::frame();
    ReplyHeader { xid, zxid: 0, err: err.as_i32() }.write(&mut w);
    Response::Sasl(token).write(&mut w);
    w.finish_frame()
}
