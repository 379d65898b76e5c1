//! [`Core`]: the server as a deterministic state machine.
//!
//! ```text
//!   shell ──open/receive/closed(conn, bytes, now)──▶ Core ──poll_output()──▶ frames, closes
//!   shell ──tick(now)──────────────────────────────▶      ──drain_txns()───▶ log (durable mode)
//!   shell ──mark_durable(zxid)─────────────────────▶      ──next_deadline()─▶ timer
//! ```
//!
//! Writes are applied to the state immediately, so later requests validate against them, but
//! every output waits behind a durability barrier: a reply, notification or close built after
//! zxid Z is released only once the shell reports Z durable. Hence nothing a client learns
//! (an acknowledgement, a read, an event) can be lost by a crash, and each connection's
//! outputs leave in the order they were produced.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;

use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    perms, xid, ClientInfo, ConnectRequest, ConnectResponse, DecodeError, ErrorCode, EventType, Id,
    MultiOp, MultiResult, OpCode, PathWatch, ReplyHeader, Request, RequestHeader, Response, Stat,
    STATE_SYNC_CONNECTED,
};

use crate::acl;
use crate::config::Config;
use crate::prep::{self, Caller, View};
use crate::state::{Applied, State};
use crate::txn::{owner_ttl_ms, Txn, TxnOp};
use crate::watches::{AddWatchMode, ConnId, WatchLimits, WatcherType, Watches};

/// Wall-clock and monotonic time, passed in by the caller: the core never reads a clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Monotonic milliseconds (any origin); drives session expiry and reaping.
    pub mono_ms: u64,
    /// Milliseconds since the Unix epoch; becomes ctime/mtime.
    pub wall_ms: i64,
}

/// Why the core asks the shell to close a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client sent closeSession.
    SessionClosed,
    /// The session expired.
    SessionExpired,
    /// The handshake named a session that is gone or used the wrong password.
    InvalidSession,
    /// The client has seen a zxid the server has not (ZooKeeper: "client must try another
    /// server"); answered by closing without a reply.
    ClientZxidAhead,
    /// Another connection resumed this connection's session.
    SessionMovedToNewConnection,
    /// An unknown or stand-alone op; ZooKeeper answers Unimplemented and closes.
    Unimplemented(i32),
    /// An auth packet for an unsupported scheme.
    AuthFailed,
    /// An auth packet past `auth_ids_per_connection_max` or `auth_bytes_per_connection_max`.
    TooManyAuthIds,
    /// A watch past `watches_per_connection_max` or `watch_path_bytes_per_connection_max`.
    TooManyWatches,
    /// A `multiRead` reply larger than `reply_bytes_max`.
    ReplyTooLarge,
}

/// What the core asks the shell to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Write a whole frame (length prefix included) to a connection.
    Send {
        /// The connection.
        conn: ConnId,
        /// The frame.
        frame: Vec<u8>,
    },
    /// Close a connection after everything queued before this.
    Close {
        /// The connection.
        conn: ConnId,
        /// Why, for the log.
        reason: CloseReason,
    },
}

/// A frame the core refused; the shell logs it and closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnError {
    /// The first frame is not a ConnectRequest.
    #[error("malformed ConnectRequest: {0}")]
    Handshake(DecodeError),
    /// A frame too short for a RequestHeader.
    #[error("malformed request header: {0}")]
    Header(DecodeError),
    /// A connection the core does not know (already closed).
    #[error("unknown connection {0}")]
    UnknownConnection(ConnId),
    /// A request with xid -1, which every client reserves for watch notifications: its
    /// reply would read as one, and would never count as an answer.
    #[error("request with the notification xid -1")]
    NotificationXid,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConnState {
    Handshake,
    Open,
    Closing,
}

#[derive(Debug, Clone)]
struct Conn {
    peer: SocketAddr,
    state: ConnState,
    session_id: Option<i64>,
    auth: Vec<Id>,
    received: u64,
    sent: u64,
    last_op: &'static str,
    /// Bytes of this connection's frames emitted and not yet polled.
    output_bytes: usize,
}

#[derive(Debug, Clone)]
struct LiveSession {
    timeout_ms: i32,
    deadline_ms: u64,
    conn: Option<ConnId>,
}

/// Counters for `srvr`, `stat` and `mntr`.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Packets received.
    pub received: u64,
    /// Packets sent.
    pub sent: u64,
    /// Sessions expired by the server.
    pub sessions_expired: u64,
    /// Connections closed because of a protocol violation.
    pub protocol_errors: u64,
}

/// Session passwords: a keyed hash of the session id, so that a client that sees its own
/// password and id learns nothing about any other session's (a seeded generator's outputs
/// can be run forward from one of them, and session ids are sequential).
#[derive(Debug, Clone)]
struct Passwords {
    key: [u8; 16],
}

impl Passwords {
    fn of(&self, session_id: i64) -> [u8; 16] {
        let mut h = sha1_smol::Sha1::new();
        h.update(&self.key);
        h.update(&session_id.to_be_bytes());
        h.update(b"rzk session password");
        h.update(&self.key);
        let mut p = [0u8; 16];
        p.copy_from_slice(&h.digest().bytes()[..16]);
        p
    }
}

/// The deterministic server. See the module docs for the event/output model.
#[derive(Debug)]
pub struct Core {
    config: Config,
    state: State,
    watches: Watches,
    conns: BTreeMap<ConnId, Conn>,
    live: HashMap<i64, LiveSession>,
    /// (deadline, session). Entries may be stale (the session was touched since); each live
    /// session has exactly one entry, re-filed at its true deadline when a stale one is popped.
    expiry: BTreeSet<(u64, i64)>,
    next_session_id: i64,
    passwords: Passwords,
    pending: VecDeque<(i64, Output)>,
    ready: VecDeque<Output>,
    /// Bytes of the frames in `pending` and `ready`.
    output_bytes: usize,
    txns: Vec<Txn>,
    durable_zxid: i64,
    next_reap_ms: u64,
    counters: Counters,
    started_mono_ms: u64,
}

/// A node a read may see: `NoNode`, or `NoAuth` without READ on it.
fn readable<'s>(st: &'s State, auth: &[Id], p: &str) -> Result<&'s crate::state::Node, ErrorCode> {
    let n = st.node(p).ok_or(ErrorCode::NoNode)?;
    if acl::check(st.acl_of(n), perms::READ, auth) {
        Ok(n)
    } else {
        Err(ErrorCode::NoAuth)
    }
}

fn reply_frame(xid: i32, zxid: i64, err: ErrorCode, body: Option<&Response>) -> Vec<u8> {
    // Room for a Stat and a short path, so the common replies never grow the buffer.
    let mut w = Writer::frame_with_capacity(ReplyHeader::LEN + Stat::LEN + 64);
    ReplyHeader { xid, zxid, err: err.as_i32() }.write(&mut w);
    if let (ErrorCode::Ok, Some(body)) = (err, body) {
        body.write(&mut w);
    }
    w.finish_frame()
}

fn notification_frame(zxid: i64, event_type: EventType, path: &str) -> Vec<u8> {
    let mut w = Writer::frame_with_capacity(28 + path.len());
    ReplyHeader { xid: xid::NOTIFICATION, zxid, err: 0 }.write(&mut w);
    w.i32(event_type as i32).i32(STATE_SYNC_CONNECTED).string(path);
    w.finish_frame()
}

impl Core {
    /// A core over a fresh tree.
    pub fn new(config: Config, now: Now) -> Core {
        Core::with_state(config, State::new(), now)
    }

    /// A core over a recovered state. Every session in it gets a full timeout from `now` to
    /// reconnect, as ZooKeeper does after a restart.
    pub fn with_state(config: Config, state: State, now: Now) -> Core {
        let server_bits = i64::from(config.server_id) << 56;
        let time_bits = ((now.wall_ms << 24) as u64 >> 8) as i64;
        let max_existing = state.sessions().keys().copied().max().unwrap_or(0);
        let next_session_id = (time_bits | server_bits).max(max_existing + 1);
        let watches = Watches::with_limits(WatchLimits {
            watches_max: config.watches_per_connection_max,
            path_bytes_max: config.watch_path_bytes_per_connection_max,
        });
        let mut core = Core {
            passwords: Passwords { key: config.seed.to_be_bytes() },
            next_reap_ms: now.mono_ms + config.container_check_interval_ms,
            config,
            durable_zxid: state.last_zxid(),
            watches,
            conns: BTreeMap::new(),
            live: HashMap::new(),
            expiry: BTreeSet::new(),
            next_session_id,
            pending: VecDeque::new(),
            ready: VecDeque::new(),
            output_bytes: 0,
            txns: Vec::new(),
            counters: Counters::default(),
            started_mono_ms: now.mono_ms,
            state,
        };
        let sessions: Vec<(i64, i32)> =
            core.state.sessions().iter().map(|(id, s)| (*id, s.timeout_ms)).collect();
        for (id, timeout_ms) in sessions {
            core.start_session(id, timeout_ms, None, now);
        }
        core
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The replicated state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Counters for monitoring.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The watch tables.
    pub fn watches(&self) -> &Watches {
        &self.watches
    }

    /// Number of open connections.
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Live sessions and the connection each is attached to.
    pub fn live_sessions(&self) -> impl Iterator<Item = (i64, Option<ConnId>)> + '_ {
        self.live.iter().map(|(id, s)| (*id, s.conn))
    }

    // ---- outputs -------------------------------------------------------------------------

    fn emit(&mut self, barrier: i64, out: Output) {
        if let Output::Send { conn, frame } = &out {
            if let Some(c) = self.conns.get_mut(conn) {
                c.sent += 1;
                c.output_bytes += frame.len();
            }
            self.counters.sent += 1;
            self.output_bytes += frame.len();
        }
        if self.pending.is_empty() && barrier <= self.durable_zxid {
            self.ready.push_back(out);
        } else {
            self.pending.push_back((barrier, out));
        }
    }

    fn send(&mut self, conn: ConnId, frame: Vec<u8>) {
        let barrier = self.state.last_zxid();
        self.emit(barrier, Output::Send { conn, frame });
    }

    fn reply(&mut self, conn: ConnId, xid: i32, err: ErrorCode, body: Option<&Response>) {
        let zxid = self.state.last_zxid();
        self.send(conn, reply_frame(xid, zxid, err, body));
    }

    fn close(&mut self, conn: ConnId, reason: CloseReason) {
        if let Some(c) = self.conns.get_mut(&conn) {
            if c.state == ConnState::Closing {
                return;
            }
            c.state = ConnState::Closing;
        }
        let barrier = self.state.last_zxid();
        self.emit(barrier, Output::Close { conn, reason });
    }

    /// The next output the shell should carry out, if it is durable.
    pub fn poll_output(&mut self) -> Option<Output> {
        let out = self.ready.pop_front();
        if let Some(Output::Send { conn, frame }) = &out {
            self.output_bytes -= frame.len();
            // Saturating: a caller may reuse a closed connection's id while frames emitted for
            // the old one are still queued.
            if let Some(c) = self.conns.get_mut(conn) {
                c.output_bytes = c.output_bytes.saturating_sub(frame.len());
            }
        }
        out
    }

    /// Bytes of one connection's frames emitted and not yet polled: with a data directory,
    /// replies wait here until the writes before them are durable.
    pub fn conn_output_bytes(&self, conn: ConnId) -> usize {
        self.conns.get(&conn).map_or(0, |c| c.output_bytes)
    }

    /// Bytes of the frames emitted and not yet polled, durable or not. The shell compares it
    /// before and after a connection's requests to bound what they make it build.
    pub fn output_bytes(&self) -> usize {
        self.output_bytes
    }

    /// Transactions applied since the last call, in zxid order, for the log.
    pub fn drain_txns(&mut self) -> std::vec::Drain<'_, Txn> {
        self.txns.drain(..)
    }

    /// Whether transactions are waiting for [`Core::drain_txns`].
    pub fn has_txns(&self) -> bool {
        !self.txns.is_empty()
    }

    /// Reports that every transaction up to `zxid` is durable, releasing the outputs that
    /// waited for it.
    pub fn mark_durable(&mut self, zxid: i64) {
        if zxid > self.durable_zxid {
            self.durable_zxid = zxid;
        }
        while let Some((barrier, _)) = self.pending.front() {
            if *barrier > self.durable_zxid {
                break;
            }
            let (_, out) = self.pending.pop_front().expect("front exists");
            self.ready.push_back(out);
        }
    }

    /// The highest zxid reported durable.
    pub fn durable_zxid(&self) -> i64 {
        self.durable_zxid
    }

    // ---- transactions --------------------------------------------------------------------

    fn commit(&mut self, session_id: i64, op: TxnOp, now: Now) -> (i64, Applied) {
        let txn = Txn { zxid: self.state.last_zxid() + 1, time_ms: now.wall_ms, session_id, op };
        let zxid = txn.zxid;
        let (applied, triggers) = match self.state.apply(&txn) {
            Ok(x) => x,
            // Prep validated this op against the same state, so this is a bug, not bad input.
            // Log it as an error transaction rather than take the server down.
            Err(e) => {
                debug_assert!(false, "validated txn failed to apply: {e}");
                let err = Txn { op: TxnOp::Error { err: ErrorCode::SystemError.as_i32() }, ..txn };
                let applied = self.state.apply(&err).expect("error txn always applies");
                self.txns.push(err);
                return (zxid, applied.0);
            }
        };
        self.txns.push(txn);
        for fired in &triggers {
            for (conn, event_type, path) in self.watches.trigger(&fired.trigger) {
                let acl = match event_type {
                    EventType::NodeChildrenChanged => fired.parent_acl.as_deref().unwrap_or(&[]),
                    _ => &fired.acl,
                };
                let may_read =
                    self.conns.get(&conn).is_some_and(|c| acl::check(acl, perms::READ, &c.auth));
                if may_read {
                    let frame = notification_frame(zxid, event_type, &path);
                    self.emit(zxid, Output::Send { conn, frame });
                }
            }
        }
        (zxid, applied)
    }

    fn commit_error(&mut self, session_id: i64, err: ErrorCode, now: Now) -> i64 {
        self.commit(session_id, TxnOp::Error { err: err.as_i32() }, now).0
    }

    // ---- sessions ------------------------------------------------------------------------

    fn start_session(&mut self, id: i64, timeout_ms: i32, conn: Option<ConnId>, now: Now) {
        let deadline_ms = now.mono_ms + timeout_ms.max(0) as u64;
        self.live.insert(id, LiveSession { timeout_ms, deadline_ms, conn });
        self.expiry.insert((deadline_ms, id));
    }

    fn touch(&mut self, session_id: i64, now: Now) {
        if let Some(s) = self.live.get_mut(&session_id) {
            s.deadline_ms = now.mono_ms + s.timeout_ms.max(0) as u64;
        }
    }

    fn negotiate(&self, requested_ms: i32) -> i32 {
        requested_ms.clamp(self.config.session_timeout_ms_min, self.config.session_timeout_ms_max)
    }

    fn end_session(&mut self, id: i64, reason: CloseReason, now: Now) -> i64 {
        let conn = self.live.remove(&id).and_then(|s| s.conn);
        let paths = self.state.ephemerals_of(id).map(String::from).collect();
        let (zxid, _) = self.commit(id, TxnOp::CloseSession { paths }, now);
        if let Some(conn) = conn {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.session_id = None;
            }
            if reason != CloseReason::SessionClosed {
                self.close(conn, reason);
            }
        }
        zxid
    }

    /// Expires sessions whose deadline has passed and reaps containers and TTL nodes when
    /// their interval comes round. Calling it early or twice is harmless.
    pub fn tick(&mut self, now: Now) {
        while let Some(&(deadline, id)) = self.expiry.first() {
            if deadline > now.mono_ms {
                break;
            }
            self.expiry.pop_first();
            let Some(s) = self.live.get(&id) else { continue };
            if s.deadline_ms > now.mono_ms {
                self.expiry.insert((s.deadline_ms, id));
                continue;
            }
            self.counters.sessions_expired += 1;
            self.end_session(id, CloseReason::SessionExpired, now);
        }
        if now.mono_ms >= self.next_reap_ms {
            self.next_reap_ms = now.mono_ms + self.config.container_check_interval_ms.max(1);
            self.reap(now);
        }
    }

    /// `ContainerManager`: deletes empty containers that have had children, and empty TTL
    /// nodes not modified within their TTL.
    fn reap(&mut self, now: Now) {
        let mut victims: Vec<String> = Vec::new();
        let max = self.config.container_reaps_per_check_max;
        for p in self.state.containers() {
            if victims.len() >= max {
                break;
            }
            let Some(n) = self.state.node(p) else { continue };
            if n.children.is_empty() && n.cversion > 0 {
                victims.push(p.to_string());
            }
        }
        for p in self.state.ttl_nodes() {
            if victims.len() >= max {
                break;
            }
            let Some(n) = self.state.node(p) else { continue };
            let ttl = owner_ttl_ms(n.ephemeral_owner).unwrap_or(i64::MAX);
            if n.children.is_empty() && now.wall_ms.saturating_sub(n.mtime) > ttl {
                victims.push(p.to_string());
            }
        }
        for p in victims {
            self.commit(0, TxnOp::Delete { path: p }, now);
        }
    }

    /// When [`Core::tick`] next has work: the earliest session deadline or reaping time.
    pub fn next_deadline(&self) -> u64 {
        let session = self.expiry.first().map_or(u64::MAX, |(d, _)| *d);
        session.min(self.next_reap_ms)
    }

    // ---- connections ---------------------------------------------------------------------

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
        };
        self.conns.insert(conn, c);
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

    fn attach(&mut self, conn: ConnId, session_id: i64) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.session_id = Some(session_id);
            c.state = ConnState::Open;
        }
    }

    fn request(&mut self, conn: ConnId, frame: &[u8], now: Now) -> Result<(), ConnError> {
        let mut r = Reader::new(frame);
        let header = RequestHeader::read(&mut r).map_err(ConnError::Header)?;
        if header.xid == xid::NOTIFICATION {
            return Err(ConnError::NotificationXid);
        }
        let session_id = self.conns[&conn].session_id.unwrap_or(0);
        self.touch(session_id, now);
        let op = OpCode::from_i32(header.op).filter(|op| {
            !matches!(
                op,
                OpCode::Check | OpCode::CreateSession | OpCode::DeleteContainer | OpCode::Error
            )
        });
        let Some(op) = op else {
            // ZooKeeper answers with zxid -1 here, before the request reaches its pipeline.
            self.send(conn, reply_frame(header.xid, -1, ErrorCode::Unimplemented, None));
            self.close(conn, CloseReason::Unimplemented(header.op));
            return Ok(());
        };
        if let Some(c) = self.conns.get_mut(&conn) {
            c.last_op = op_name(op);
        }
        let Ok(req) = Request::read(op, &mut r) else {
            // ZooKeeper decodes bodies inside its pipeline, so a bad body is an error reply
            // (and, for a write, an error transaction), not a dropped connection.
            if op.is_write() {
                self.commit_error(session_id, ErrorCode::MarshallingError, now);
            }
            self.reply(conn, header.xid, ErrorCode::MarshallingError, None);
            return Ok(());
        };
        self.dispatch(conn, session_id, header.xid, req, now);
        // The request is answered as if its watch were left; the close that follows tells
        // the client it was not.
        for refused in self.watches.take_refused() {
            self.close(refused, CloseReason::TooManyWatches);
        }
        Ok(())
    }

    fn caller(&self, conn: ConnId, session_id: i64) -> Caller<'_> {
        Caller {
            session_id,
            auth: &self.conns[&conn].auth,
            extended_types_enabled: self.config.extended_types_enabled,
            acl_limits: acl::AclLimits {
                entries_max: self.config.acl_entries_max,
                bytes_max: self.config.acl_bytes_max,
            },
            txn_acl_bytes_max: self.config.max_packet_bytes,
        }
    }

    /// Runs a validated single write, or logs its error, and replies.
    fn write(
        &mut self,
        conn: ConnId,
        session_id: i64,
        xid: i32,
        prepped: Result<TxnOp, ErrorCode>,
        now: Now,
        respond: impl FnOnce(&Applied) -> Response,
    ) {
        match prepped {
            Ok(op) => {
                let (_, applied) = self.commit(session_id, op, now);
                let body = respond(&applied);
                self.reply(conn, xid, ErrorCode::Ok, Some(&body));
            }
            Err(err) => {
                self.commit_error(session_id, err, now);
                self.reply(conn, xid, err, None);
            }
        }
    }

    fn dispatch(&mut self, conn: ConnId, session_id: i64, xid: i32, req: Request, now: Now) {
        match req {
            Request::Ping => {
                self.send(conn, reply_frame(xid::PING, self.state.last_zxid(), ErrorCode::Ok, None))
            }
            Request::Create(c) => {
                let prepped =
                    prep::create(&View::new(&self.state), &self.caller(conn, session_id), &c);
                let op = c.op;
                self.write(conn, session_id, xid, prepped, now, |a| match (a, op) {
                    (Applied::Created { path, .. }, rzk_proto::CreateOp::Create) => {
                        Response::Path(path.clone())
                    }
                    (Applied::Created { path, stat }, _) => {
                        Response::Create2 { path: path.clone(), stat: *stat }
                    }
                    _ => Response::Empty,
                });
            }
            Request::Delete { path, version } => {
                let prepped = prep::delete(
                    &View::new(&self.state),
                    &self.caller(conn, session_id),
                    &path,
                    version,
                );
                self.write(conn, session_id, xid, prepped, now, |_| Response::Empty);
            }
            Request::SetData { path, data, version } => {
                let prepped = prep::set_data(
                    &View::new(&self.state),
                    &self.caller(conn, session_id),
                    &path,
                    &data,
                    version,
                );
                self.write(conn, session_id, xid, prepped, now, |a| match a {
                    Applied::DataSet(stat) => Response::Stat(*stat),
                    _ => Response::Empty,
                });
            }
            Request::SetAcl { path, acl, version } => {
                let prepped = prep::set_acl(
                    &View::new(&self.state),
                    &self.caller(conn, session_id),
                    &path,
                    &acl,
                    version,
                );
                self.write(conn, session_id, xid, prepped, now, |a| match a {
                    Applied::AclSet(stat) => Response::Stat(*stat),
                    _ => Response::Empty,
                });
            }
            Request::Multi(ops) => self.multi(conn, session_id, xid, &ops, now),
            Request::CloseSession => {
                let zxid = self.end_session(session_id, CloseReason::SessionClosed, now);
                self.send(conn, reply_frame(xid, zxid, ErrorCode::Ok, None));
                self.close(conn, CloseReason::SessionClosed);
            }
            // Auth and setWatches echo the request's xid: Java and kazoo send -4 and -8, but
            // zookeeper-client sends auth with an ordinary xid and matches the reply on it.
            Request::Auth { scheme, auth, .. } => self.auth(conn, xid, &scheme, &auth),
            Request::SetWatches { watches, .. } => {
                self.set_watches(conn, &watches);
                self.send(conn, reply_frame(xid, self.state.last_zxid(), ErrorCode::Ok, None));
            }
            Request::Reconfig { .. } => self.reply(conn, xid, ErrorCode::ReconfigDisabled, None),
            Request::Sasl { .. } => self.reply(conn, xid, ErrorCode::Unimplemented, None),
            Request::Check { .. } => unreachable!("filtered before decoding"),
            Request::GetChildren(pw) => self.get_children(conn, xid, &pw, false),
            Request::GetChildren2(pw) => self.get_children(conn, xid, &pw, true),
            Request::GetData(pw) => self.get_data(conn, xid, &pw),
            Request::MultiRead(ops) => self.multi_read(conn, xid, &ops),
            read => {
                let result = self.read(conn, session_id, read);
                match result {
                    Ok(body) => self.reply(conn, xid, ErrorCode::Ok, Some(&body)),
                    Err(err) => self.reply(conn, xid, err, None),
                }
            }
        }
    }

    fn multi(&mut self, conn: ConnId, session_id: i64, xid: i32, ops: &[MultiOp], now: Now) {
        let prepped = prep::multi(&self.state, &self.caller(conn, session_id), ops);
        let results = match prepped {
            Ok(txn_ops) => {
                let (_, applied) = self.commit(session_id, TxnOp::Multi(txn_ops), now);
                let Applied::Multi(applied) = applied else {
                    self.reply(conn, xid, ErrorCode::SystemError, None);
                    return;
                };
                ops.iter()
                    .zip(applied)
                    .map(|(op, a)| match (op, a) {
                        (MultiOp::Create(c), Applied::Created { path, .. })
                            if c.op == rzk_proto::CreateOp::Create =>
                        {
                            MultiResult::Create { path }
                        }
                        (MultiOp::Create(_), Applied::Created { path, stat }) => {
                            MultiResult::Create2 { path, stat }
                        }
                        (_, Applied::Deleted) => MultiResult::Delete,
                        (_, Applied::DataSet(stat)) => MultiResult::SetData { stat },
                        _ => MultiResult::Check,
                    })
                    .collect()
            }
            Err((failed, err)) => {
                self.commit_error(session_id, err, now);
                (0..ops.len())
                    .map(|i| MultiResult::Error {
                        err: match i.cmp(&failed) {
                            std::cmp::Ordering::Less => 0,
                            std::cmp::Ordering::Equal => err.as_i32(),
                            std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency.as_i32(),
                        },
                    })
                    .collect()
            }
        };
        self.reply(conn, xid, ErrorCode::Ok, Some(&Response::Multi(results)));
    }

    fn auth(&mut self, conn: ConnId, xid: i32, scheme: &str, credentials: &[u8]) {
        let ids = match scheme {
            "digest" => acl::digest_auth_ids(credentials, self.config.super_digest.as_deref()),
            "ip" => vec![Id::new("ip", self.conns[&conn].peer.ip().to_string())],
            _ => {
                self.send(conn, reply_frame(xid, 0, ErrorCode::AuthFailed, None));
                self.close(conn, CloseReason::AuthFailed);
                return;
            }
        };
        let (ids_max, bytes_max) =
            (self.config.auth_ids_per_connection_max, self.config.auth_bytes_per_connection_max);
        let c = self.conns.get_mut(&conn).expect("caller checked");
        let id_bytes = |id: &Id| id.scheme.len() + id.id.len();
        let mut bytes: usize = c.auth.iter().map(id_bytes).sum();
        let mut over = false;
        for id in ids {
            if c.auth.contains(&id) {
                continue;
            }
            bytes = bytes.saturating_add(id_bytes(&id));
            if c.auth.len() >= ids_max || bytes > bytes_max {
                over = true;
                break;
            }
            c.auth.push(id);
        }
        if over {
            // ZooKeeper's answer to any auth it cannot accept; the ids added so far stay, and
            // go with the connection.
            self.send(conn, reply_frame(xid, 0, ErrorCode::AuthFailed, None));
            self.close(conn, CloseReason::TooManyAuthIds);
            return;
        }
        self.send(conn, reply_frame(xid, 0, ErrorCode::Ok, None));
    }

    /// `DataTree.setWatches`: re-arms watches after a reconnect, firing at once for anything
    /// that changed after the client's last zxid.
    fn set_watches(&mut self, conn: ConnId, w: &rzk_proto::SetWatches) {
        let rel = w.relative_zxid;
        let mut fire: Vec<(EventType, &str)> = Vec::new();
        for p in &w.data {
            match self.state.node(p) {
                None => fire.push((EventType::NodeDeleted, p)),
                Some(n) if n.mzxid > rel => fire.push((EventType::NodeDataChanged, p)),
                Some(_) => self.watches.add_data(p, conn),
            }
        }
        for p in &w.exist {
            match self.state.node(p) {
                Some(_) => fire.push((EventType::NodeCreated, p)),
                None => self.watches.add_data(p, conn),
            }
        }
        for p in &w.child {
            match self.state.node(p) {
                None => fire.push((EventType::NodeDeleted, p)),
                Some(n) if n.pzxid > rel => fire.push((EventType::NodeChildrenChanged, p)),
                Some(_) => self.watches.add_child(p, conn),
            }
        }
        for p in &w.persistent {
            self.watches.add_persistent(p, conn, AddWatchMode::Persistent);
        }
        for p in &w.persistent_recursive {
            self.watches.add_persistent(p, conn, AddWatchMode::PersistentRecursive);
        }
        let zxid = self.state.last_zxid();
        for (t, p) in fire {
            self.send(conn, notification_frame(zxid, t, p));
        }
    }

    /// getChildren and getChildren2, encoded straight from the tree: an election parent with
    /// thousands of children is read on every join and every handoff, and a `String` per child
    /// (allocated, copied, encoded, freed) was most of the cost.
    fn get_children(&mut self, conn: ConnId, xid: i32, pw: &PathWatch, with_stat: bool) {
        let st = &self.state;
        let n = match readable(st, &self.conns[&conn].auth, &pw.path) {
            Ok(n) => n,
            Err(err) => return self.reply(conn, xid, err, None),
        };
        let names: usize = n.children.iter().map(|c| 4 + c.len()).sum();
        let mut w = Writer::frame_with_capacity(ReplyHeader::LEN + 4 + names + Stat::LEN);
        ReplyHeader { xid, zxid: st.last_zxid(), err: 0 }.write(&mut w);
        w.i32(n.children.len() as i32);
        for c in &n.children {
            w.string(c);
        }
        if with_stat {
            st.stat_of(n).write(&mut w);
        }
        if pw.watch {
            self.watches.add_child(&pw.path, conn);
        }
        self.send(conn, w.finish_frame());
    }

    /// getData, encoded straight from the tree into a frame of the right size: the most
    /// frequent request of read-heavy clients, where copying the data out first and growing
    /// the frame were measurable.
    fn get_data(&mut self, conn: ConnId, xid: i32, pw: &PathWatch) {
        let st = &self.state;
        let n = match readable(st, &self.conns[&conn].auth, &pw.path) {
            Ok(n) => n,
            Err(err) => return self.reply(conn, xid, err, None),
        };
        let data = n.data.as_deref();
        let len = ReplyHeader::LEN + 4 + data.map_or(0, <[u8]>::len) + Stat::LEN;
        let mut w = Writer::frame_with_capacity(len);
        ReplyHeader { xid, zxid: st.last_zxid(), err: 0 }.write(&mut w);
        w.buffer_opt(data);
        st.stat_of(n).write(&mut w);
        if pw.watch {
            self.watches.add_data(&pw.path, conn);
        }
        self.send(conn, w.finish_frame());
    }

    /// multiRead, built only up to `reply_bytes_max`: its ops are a few bytes each, so one
    /// request could otherwise ask for the same large node tens of thousands of times.
    fn multi_read(&mut self, conn: ConnId, xid: i32, ops: &[MultiOp]) {
        let auth = &self.conns[&conn].auth;
        let st = &self.state;
        // The reply header and the multi's end marker; then per op its result header (type,
        // done, err) and body.
        let mut bytes = ReplyHeader::LEN + 9;
        let mut results = Vec::with_capacity(ops.len().min(1024));
        for op in ops {
            let (found, is_data) = match op {
                MultiOp::GetData { path } => (readable(st, auth, path), true),
                MultiOp::GetChildren { path } => (readable(st, auth, path), false),
                _ => (Err(ErrorCode::BadArguments), false),
            };
            let body = match found {
                Ok(n) if is_data => 4 + n.data.as_deref().map_or(0, <[u8]>::len) + Stat::LEN,
                Ok(n) => 4 + n.children.iter().map(|c| 4 + c.len()).sum::<usize>(),
                Err(_) => 4,
            };
            bytes = bytes.saturating_add(9 + body);
            // Java's client refuses a frame of `jute.maxbuffer` bytes or more.
            if bytes >= self.config.reply_bytes_max {
                self.close(conn, CloseReason::ReplyTooLarge);
                return;
            }
            results.push(match found {
                Ok(n) if is_data => MultiResult::GetData {
                    data: n.data.as_deref().map(<[u8]>::to_vec),
                    stat: st.stat_of(n),
                },
                Ok(n) => MultiResult::GetChildren {
                    children: n.children.iter().map(|c| c.to_string()).collect(),
                },
                Err(e) => MultiResult::Error { err: e.as_i32() },
            });
        }
        self.reply(conn, xid, ErrorCode::Ok, Some(&Response::Multi(results)));
    }

    /// Reads never change the state; they may leave watches.
    fn read(&mut self, conn: ConnId, session_id: i64, req: Request) -> Result<Response, ErrorCode> {
        let auth = &self.conns[&conn].auth;
        let st = &self.state;
        match req {
            Request::Exists(pw) => {
                if pw.path.contains('\0') {
                    return Err(ErrorCode::BadArguments);
                }
                // The watch is left even when the node is missing, so a later create fires it.
                let stat = st.node(&pw.path).map(|n| st.stat_of(n));
                if pw.watch {
                    self.watches.add_data(&pw.path, conn);
                }
                stat.map(Response::Stat).ok_or(ErrorCode::NoNode)
            }
            Request::GetData(_) => unreachable!("encoded by get_data"),
            Request::GetAcl { path } => {
                let n = st.node(&path).ok_or(ErrorCode::NoNode)?;
                let list = st.acl_of(n);
                let stat = st.stat_of(n);
                if acl::check(list, perms::ADMIN, auth) {
                    Ok(Response::GetAcl { acl: list.to_vec(), stat })
                } else if acl::check(list, acl::READ_OR_ADMIN, auth) {
                    Ok(Response::GetAcl { acl: acl::masked(list), stat })
                } else {
                    Err(ErrorCode::NoAuth)
                }
            }
            Request::Sync { path } => Ok(Response::Path(path)),
            Request::GetAllChildrenNumber { path } => {
                readable(st, auth, &path)?;
                Ok(Response::Count(st.descendant_count(&path) as i32))
            }
            Request::GetEphemerals { prefix } => {
                let all = prefix.is_empty() || prefix == "/";
                let list = st
                    .ephemerals_of(session_id)
                    .filter(|p| all || p.starts_with(prefix.as_str()))
                    .map(str::to_string)
                    .collect();
                Ok(Response::Children(list))
            }
            Request::MultiRead(_) => unreachable!("answered by multi_read"),
            Request::WhoAmI => Ok(Response::WhoAmI(
                auth.iter()
                    .map(|id| ClientInfo {
                        auth_scheme: id.scheme.clone(),
                        user: match id.scheme.as_str() {
                            "digest" => id.id.split(':').next().unwrap_or("").to_string(),
                            _ => id.id.clone(),
                        },
                    })
                    .collect(),
            )),
            Request::AddWatch { path, mode } => {
                let mode = match mode {
                    0 => AddWatchMode::Persistent,
                    1 => AddWatchMode::PersistentRecursive,
                    _ => return Err(ErrorCode::BadArguments),
                };
                self.watches.add_persistent(&path, conn, mode);
                Ok(Response::ErrorBody(0))
            }
            Request::CheckWatches { path, watch_type } => {
                let t = WatcherType::from_i32(watch_type).ok_or(ErrorCode::BadArguments)?;
                if self.watches.contains(&path, conn, t) {
                    Ok(Response::Empty)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }
            Request::RemoveWatches { path, watch_type } => {
                let t = WatcherType::from_i32(watch_type).ok_or(ErrorCode::BadArguments)?;
                if self.watches.remove(&path, conn, t) {
                    Ok(Response::Empty)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    // ---- monitoring ----------------------------------------------------------------------

    /// Milliseconds since the core started, for `srvr`/`mntr` uptime.
    pub fn uptime_ms(&self, now: Now) -> u64 {
        now.mono_ms.saturating_sub(self.started_mono_ms)
    }

    /// Per-connection details for `cons` and `stat`: (peer, session, received, sent, last op).
    pub fn connection_details(&self) -> Vec<(SocketAddr, Option<i64>, u64, u64, &'static str)> {
        self.conns.values().map(|c| (c.peer, c.session_id, c.received, c.sent, c.last_op)).collect()
    }

    /// Outputs waiting for durability, for `srvr`'s "Outstanding".
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// Session deadlines relative to `now`, for `dump`.
    pub fn session_deadlines(&self, now: Now) -> Vec<(i64, i64)> {
        let mut v: Vec<(i64, i64)> = self
            .live
            .iter()
            .map(|(id, s)| (*id, s.deadline_ms as i64 - now.mono_ms as i64))
            .collect();
        v.sort_unstable();
        v
    }
}

/// The names ZooKeeper's `cons` prints for the last operation.
fn op_name(op: OpCode) -> &'static str {
    use OpCode::*;
    match op {
        Create | Create2 | CreateContainer | CreateTtl => "CREA",
        Delete => "DELE",
        Exists => "EXIS",
        GetData => "GETD",
        SetData => "SETD",
        GetAcl => "GETA",
        SetAcl => "SETA",
        GetChildren => "GETC",
        GetChildren2 => "GETC2",
        Sync => "SYNC",
        Ping => "PING",
        Multi => "MULT",
        MultiRead => "MLTR",
        CloseSession => "CLOS",
        SetWatches | SetWatches2 => "SETW",
        Auth => "AUTH",
        _ => "OTHR",
    }
}
