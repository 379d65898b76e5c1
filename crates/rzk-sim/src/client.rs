//! A simulated ZooKeeper client: it keeps its session across connections, pipelines requests,
//! and checks what comes back against what it asked.

use std::collections::{BTreeSet, VecDeque};

use rzk_core::ConnId;
use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    Acl, ConnectRequest, ConnectResponse, CreateOp, CreateRequest, EventType, MultiOp, PathWatch,
    ReplyHeader, Request, Response, WatcherEvent,
};

use crate::Rng;

/// What a pending request was, so its reply can be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// A write; `sequential` names the parent of a sequential create.
    Write {
        /// Parent of a sequential create.
        sequential: Option<String>,
    },
    /// A read that leaves a data watch (`exists`: even on a missing node).
    WatchData {
        /// The node.
        path: String,
        /// Whether the watch is left even when the node is missing.
        exists: bool,
    },
    /// A read that leaves a child watch.
    WatchChildren {
        /// The node.
        path: String,
    },
    /// A ping.
    Ping,
    /// closeSession.
    Close,
}

/// Something the client observed that the checker must look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// A write was acknowledged at this zxid.
    Ack(i64),
    /// A sequential create under `parent` got this suffix.
    Sequence {
        /// The parent.
        parent: String,
        /// The suffix.
        seq: i64,
    },
    /// The session was reported expired.
    Expired,
}

/// One simulated client.
#[derive(Debug)]
pub struct SimClient {
    /// Index in the simulation.
    pub id: usize,
    /// The current connection, if any.
    pub conn: Option<ConnId>,
    /// 0 before the first session.
    pub session_id: i64,
    /// The session password.
    pub passwd: Vec<u8>,
    /// Requested session timeout.
    pub timeout_ms: i32,
    /// Negotiated session timeout.
    pub negotiated_ms: i32,
    /// Waiting for the ConnectResponse.
    pub connecting: bool,
    /// Requests sent and not yet answered, in order.
    pub pending: VecDeque<(i32, Sent)>,
    next_xid: i32,
    /// Virtual time of the last frame sent.
    pub last_sent_ms: u64,
    /// The client stops talking until then (a stall).
    pub stalled_until_ms: u64,
    /// Paths with a one-shot data watch armed.
    pub data_armed: BTreeSet<String>,
    /// Paths with a one-shot child watch armed.
    pub child_armed: BTreeSet<String>,
    /// Highest zxid seen in a reply.
    pub last_zxid_seen: i64,
}

impl SimClient {
    /// A client with no session yet.
    pub fn new(id: usize, timeout_ms: i32) -> SimClient {
        SimClient {
            id,
            conn: None,
            session_id: 0,
            passwd: vec![0; 16],
            timeout_ms,
            negotiated_ms: timeout_ms,
            connecting: false,
            pending: VecDeque::new(),
            next_xid: 0,
            last_sent_ms: 0,
            stalled_until_ms: 0,
            data_armed: BTreeSet::new(),
            child_armed: BTreeSet::new(),
            last_zxid_seen: 0,
        }
    }

    /// The connection is gone: unanswered requests are lost with it, and so are its watches.
    pub fn disconnected(&mut self) {
        self.conn = None;
        self.connecting = false;
        self.pending.clear();
        self.data_armed.clear();
        self.child_armed.clear();
    }

    /// The frame (without length prefix) of a handshake for a new connection.
    pub fn connect_frame(&mut self, conn: ConnId, now_ms: u64) -> Vec<u8> {
        self.conn = Some(conn);
        self.connecting = true;
        self.last_sent_ms = now_ms;
        let mut w = Writer::new();
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid_seen,
            timeout_ms: self.timeout_ms,
            session_id: self.session_id,
            passwd: self.passwd.clone(),
            read_only: Some(false),
        }
        .write(&mut w);
        w.into_inner()
    }

    fn frame(&mut self, req: &Request, sent: Sent, now_ms: u64) -> Vec<u8> {
        self.next_xid += 1;
        let xid = if sent == Sent::Ping { -2 } else { self.next_xid };
        self.pending.push_back((xid, sent));
        self.last_sent_ms = now_ms;
        req.to_frame(xid)[4..].to_vec()
    }

    /// A ping frame.
    pub fn ping(&mut self, now_ms: u64) -> Vec<u8> {
        self.frame(&Request::Ping, Sent::Ping, now_ms)
    }

    /// closeSession.
    pub fn close(&mut self, now_ms: u64) -> Vec<u8> {
        self.frame(&Request::CloseSession, Sent::Close, now_ms)
    }

    /// A random request over a small path space, so that requests collide.
    pub fn random_request(&mut self, rng: &mut Rng, now_ms: u64) -> Vec<u8> {
        let dir = format!("/s{}", rng.below(3));
        let node = format!("{dir}/n{}", rng.below(5));
        let create = |op, path: String, flags: i32| {
            Request::Create(CreateRequest {
                op,
                path,
                data: Some(vec![1, 2, 3]),
                acl: Acl::open(),
                flags,
                ttl_ms: -1,
            })
        };
        let write = Sent::Write { sequential: None };
        let (req, sent) = match rng.below(16) {
            0 => (create(CreateOp::Create, dir, 0), write),
            1 | 2 => (create(CreateOp::Create2, node, 0), write),
            3 => (create(CreateOp::Create, node, 1), write),
            4 | 5 => {
                let flags = if rng.percent(50) { 2 } else { 3 };
                (
                    create(CreateOp::Create, format!("{dir}/q-"), flags),
                    Sent::Write { sequential: Some(dir) },
                )
            }
            6 => (Request::Delete { path: node, version: -1 }, write),
            7 => (
                Request::SetData { path: node, data: Some(vec![rng.below(9) as u8]), version: -1 },
                write,
            ),
            8 => (
                Request::Multi(vec![
                    MultiOp::Check { path: dir.clone(), version: -1 },
                    MultiOp::SetData { path: node.clone(), data: None, version: -1 },
                    MultiOp::Create(CreateRequest {
                        op: CreateOp::Create,
                        path: format!("{node}x"),
                        data: None,
                        acl: Acl::open(),
                        flags: 1,
                        ttl_ms: -1,
                    }),
                ]),
                write,
            ),
            9 | 10 => (
                Request::GetData(PathWatch { path: node.clone(), watch: true }),
                Sent::WatchData { path: node, exists: false },
            ),
            11 | 12 => (
                Request::Exists(PathWatch { path: node.clone(), watch: true }),
                Sent::WatchData { path: node, exists: true },
            ),
            13 | 14 => (
                Request::GetChildren(PathWatch { path: dir.clone(), watch: true }),
                Sent::WatchChildren { path: dir },
            ),
            _ => (Request::Ping, Sent::Ping),
        };
        self.frame(&req, sent, now_ms)
    }

    /// Handles one frame from the server. Returns what the checker must know, or a violation.
    pub fn receive(&mut self, frame: &[u8]) -> Result<Vec<Observed>, String> {
        let mut out = Vec::new();
        if self.connecting {
            self.connecting = false;
            let resp = ConnectResponse::read(&mut Reader::new(frame))
                .map_err(|e| format!("bad ConnectResponse: {e}"))?;
            if resp.timeout_ms <= 0 {
                // Expired: the next connection starts a new session.
                self.session_id = 0;
                self.passwd = vec![0; 16];
                out.push(Observed::Expired);
            } else {
                if self.session_id != 0 && resp.session_id != self.session_id {
                    return Err(format!(
                        "resumed session {:#x} came back as {:#x}",
                        self.session_id, resp.session_id
                    ));
                }
                self.session_id = resp.session_id;
                self.passwd = resp.passwd;
                self.negotiated_ms = resp.timeout_ms;
            }
            return Ok(out);
        }
        let mut r = Reader::new(frame);
        let h = ReplyHeader::read(&mut r).map_err(|e| format!("bad reply header: {e}"))?;
        if h.xid == -1 {
            let ev = WatcherEvent::read(&mut r).map_err(|e| format!("bad event: {e}"))?;
            return self.notified(ev).map(|_| out);
        }
        let Some((xid, sent)) = self.pending.pop_front() else {
            return Err(format!("client {}: reply xid {} with nothing pending", self.id, h.xid));
        };
        if xid != h.xid {
            return Err(format!(
                "client {}: reply xid {} out of order, expected {xid}",
                self.id, h.xid
            ));
        }
        if h.zxid > 0 {
            self.last_zxid_seen = self.last_zxid_seen.max(h.zxid);
        }
        match sent {
            Sent::Write { sequential } if h.err == 0 => {
                out.push(Observed::Ack(h.zxid));
                if let Some(parent) = sequential {
                    let body = Response::read(rzk_proto::OpCode::Create, &mut r)
                        .map_err(|e| format!("bad create reply: {e}"))?;
                    if let Response::Path(p) = body {
                        let seq = p
                            .rsplit('-')
                            .next()
                            .and_then(|s| s.parse::<i64>().ok())
                            .ok_or(format!("bad sequential name {p}"))?;
                        out.push(Observed::Sequence { parent, seq });
                    }
                }
            }
            Sent::WatchData { path, exists } if h.err == 0 || (exists && h.err == -101) => {
                self.data_armed.insert(path);
            }
            Sent::WatchChildren { path } if h.err == 0 => {
                self.child_armed.insert(path);
            }
            _ => {}
        }
        Ok(out)
    }

    /// A one-shot watch fires at most once: each event must consume an armed watch.
    fn notified(&mut self, ev: WatcherEvent) -> Result<(), String> {
        let p = ev.path;
        let ok = match ev.event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => self.data_armed.remove(&p),
            EventType::NodeDeleted => {
                let d = self.data_armed.remove(&p);
                let c = self.child_armed.remove(&p);
                d || c
            }
            EventType::NodeChildrenChanged => self.child_armed.remove(&p),
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "client {}: {:?} on {p} without an armed watch (fired twice?)",
                self.id, ev.event_type
            ))
        }
    }
}
