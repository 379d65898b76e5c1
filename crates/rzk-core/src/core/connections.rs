//! Connections: open, closed, the handshake that attaches a session, and each frame received.

use std::net::SocketAddr;

use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{ConnectRequest, ConnectResponse, Id};

use crate::txn::TxnOp;
use crate::watches::ConnId;

use super::interface::{CloseReason, ConnError, Now};
use super::records::{Conn, ConnState};
use super::Core;

impl Core {
    /// A new connection from `peer`. Its first frame must be a ConnectRequest.
    pub fn open(&mut self, conn: ConnId, peer: SocketAddr) {
        let auth = vec![Id::new("ip", peer.ip().to_string())];
        let c = Conn {
            peer,
            state: ConnState::Handshake,
            session_id: None,
            auth,
            received: 0,
            sent: 0,
            last_op: "NA",
            output_bytes: 0,
            sasl: None,
        };
        self.conns.insert(conn, c);
    }

    /// An identity the transport established before the first frame: a verified TLS client
    /// certificate's subject, as `x509`. It counts as an auth packet's ids do (ACLs, `auth`
    /// entries, enforced authentication), but no auth packet limit applies: there is one.
    pub fn authenticated(&mut self, conn: ConnId, id: Id) {
        if let Some(c) = self.conns.get_mut(&conn) {
            if !c.auth.contains(&id) {
                c.auth.push(id);
            }
        }
    }

    /// The connection is gone (either side closed it). Its watches go; its session lives on
    /// until it expires or another connection resumes it.
    pub fn closed(&mut self, conn: ConnId) {
        let Some(c) = self.conns.remove(&conn) else { return };
        self.watches.remove_conn(conn);
        if let Some(id) = c.session_id {
            if let Some(s) = self.live.get_mut(&id) {
                if s.conn == Some(conn) {
                    s.conn = None;
                }
            }
        }
    }

    /// One whole frame (without its length prefix) from a connection.
    ///
    /// Returns an error when the frame cannot be understood at all; the caller should log it
    /// and close the connection. Requests that are merely invalid get ZooKeeper's error reply.
    pub fn receive(&mut self, conn: ConnId, frame: &[u8], now: Now) -> Result<(), ConnError> {
        let c = self.conns.get_mut(&conn).ok_or(ConnError::UnknownConnection(conn))?;
        c.received += 1;
        self.counters.received += 1;
        match c.state {
            ConnState::Closing => Ok(()),
            ConnState::Handshake => self.handshake(conn, frame, now),
            ConnState::Open => self.request(conn, frame, now),
        }
        .inspect_err(|_| self.counters.protocol_errors += 1)
    }

    /// The first frame: a ConnectRequest that creates a session or resumes one.
    fn handshake(&mut self, conn: ConnId, frame: &[u8], now: Now) -> Result<(), ConnError> {
        let req = ConnectRequest::read(&mut Reader::new(frame)).map_err(ConnError::Handshake)?;
        if req.last_zxid_seen > self.state.last_zxid() {
            self.close(conn, CloseReason::ClientZxidAhead);
            return Ok(());
        }
        let timeout_ms = self.negotiate(req.timeout_ms);
        let resp = |timeout_ms, session_id, passwd: [u8; 16]| ConnectResponse {
            protocol_version: 0,
            timeout_ms,
            session_id,
            passwd: passwd.to_vec(),
            read_only: req.read_only.map(|_| false),
        };
        let response = if req.session_id == 0 {
            let id = self.next_session_id;
            self.next_session_id += 1;
            let passwd = self.passwords.of(id);
            self.commit(id, TxnOp::CreateSession { timeout_ms, passwd }, now);
            self.start_session(id, timeout_ms, Some(conn), now);
            self.attach(conn, id);
            resp(timeout_ms, id, passwd)
        } else {
            let known = self.state.sessions().get(&req.session_id).map(|s| s.passwd);
            match known {
                Some(passwd)
                    if passwd[..] == req.passwd[..] && self.live.contains_key(&req.session_id) =>
                {
                    let id = req.session_id;
                    let old = self.live.get_mut(&id).and_then(|s| {
                        s.timeout_ms = timeout_ms;
                        s.conn.replace(conn)
                    });
                    if let Some(old) = old.filter(|&old| old != conn) {
                        if let Some(c) = self.conns.get_mut(&old) {
                            c.session_id = None;
                        }
                        self.close(old, CloseReason::SessionMovedToNewConnection);
                    }
                    self.touch(id, now);
                    self.attach(conn, id);
                    resp(timeout_ms, id, passwd)
                }
                _ => {
                    let mut w = Writer::frame();
                    resp(0, 0, [0; 16]).write(&mut w);
                    self.send(conn, w.finish_frame());
                    self.close(conn, CloseReason::InvalidSession);
                    return Ok(());
                }
            }
        };
        let mut w = Writer::frame_with_capacity(41);
        response.write(&mut w);
        self.send(conn, w.finish_frame());
        Ok(())
    }

    /// The connection serves `session_id` from now on.
    fn attach(&mut self, conn: ConnId, session_id: i64) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.session_id = Some(session_id);
            c.state = ConnState::Open;
        }
    }
}
