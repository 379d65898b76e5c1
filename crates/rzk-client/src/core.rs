//! The session's bookkeeping, with no I/O: xids, the requests awaiting replies, the watch
//! table, the credentials to replay, and the last zxid seen. The connection task feeds it
//! the frames it reads and writes the bytes it produces, so every rule here can be tested
//! without a socket.

use std::collections::VecDeque;

use rzk_proto::jute::Reader;
use rzk_proto::{xid, ErrorCode, OpCode, ReplyHeader, Request, Response, SetWatches, WatcherEvent};
use tokio::sync::{oneshot, OwnedSemaphorePermit};
use tokio::time::Instant;

use crate::hosts::Chroot;
use crate::types::{EventType, SessionState, WatcherType};
use crate::watches::{Kind, Sink, Watches};
use crate::Error;

/// The most bytes of paths one `SetWatches` frame carries after a reconnect (ZooKeeper's
/// client splits at the same size, which every server accepts).
const SET_WATCHES_MAX_BYTES: usize = 128 * 1024;

/// A watch to add once its request's reply says it was set.
pub(crate) struct WatchOn {
    /// The server's path.
    pub path: String,
    /// `Data` for exists: it becomes `Exist` when the node was missing.
    pub kind: Kind,
    pub sink: Sink,
}

/// Watches to remove once the server's answer says they were removed
/// ([`Client::remove_watches`](crate::Client::remove_watches)).
pub(crate) struct WatchOff {
    /// The server's path.
    pub path: String,
    /// The caller's, which the removal events name.
    pub client_path: String,
    pub which: WatcherType,
    /// Remove them here whatever the server answers, or without asking it when the session
    /// has no connection (the Java client's `local`).
    pub local: bool,
}

/// What a request does to the watch table.
pub(crate) enum Watching {
    Set(WatchOn),
    Remove(WatchOff),
}

/// What the session task does with a request that reaches it while the session has no
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhileAway {
    /// Keep it and send it once the session is resumed (ZooKeeper's clients queue so too).
    Defer,
    /// Fail it at once with [`Error::ConnectionLoss`], unsent: a write whose caller stops
    /// acting on a loss signal must not reach the server at some later moment.
    Fail,
}

/// A request from a caller.
pub(crate) struct Call {
    pub request: Request,
    pub watch: Option<Watching>,
    pub reply: oneshot::Sender<Result<Response, Error>>,
    /// Held until the reply: the bound on requests outstanding.
    pub permit: Option<OwnedSemaphorePermit>,
    pub away: WhileAway,
}

struct Pending {
    xid: i32,
    op: OpCode,
    watch: Option<Watching>,
    /// For a local removal: whether waiters were removed here when it was sent.
    removed_here: bool,
    reply: oneshot::Sender<Result<Response, Error>>,
    _permit: Option<OwnedSemaphorePermit>,
    sent: Instant,
}

/// What a frame meant for the connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// Handled.
    Done,
    /// The server answered the closeSession request.
    Closed,
    /// The server rejected the credentials; the session is over.
    AuthFailed,
}

/// The bookkeeping.
pub(crate) struct Core {
    chroot: Chroot,
    xid: i32,
    pending: VecDeque<Pending>,
    watches: Watches,
    auths: Vec<(String, Vec<u8>)>,
    /// Callers waiting for an auth's answer, in the order sent; `None` for a replay.
    auth_waiters: VecDeque<Option<oneshot::Sender<Result<(), Error>>>>,
    /// The highest zxid in any reply: a reconnect must not go back in time.
    pub last_zxid: i64,
}

impl Core {
    pub fn new(chroot: Chroot) -> Core {
        Core {
            chroot,
            xid: 0,
            pending: VecDeque::new(),
            watches: Watches::default(),
            auths: Vec::new(),
            auth_waiters: VecDeque::new(),
            last_zxid: 0,
        }
    }

    fn next_xid(&mut self) -> i32 {
        self.xid = if self.xid == i32::MAX { 1 } else { self.xid + 1 };
        self.xid
    }

    /// Appends `call`'s frame to `out` and remembers it. A local removal takes its watches
    /// out of the table now, so no event reaches them after the caller asked.
    pub fn send(&mut self, call: Call, out: &mut Vec<u8>) {
        let xid = self.next_xid();
        let op = call.request.op_code();
        out.extend_from_slice(&call.request.to_frame(xid));
        let Call { watch, reply, permit, .. } = call;
        let removed_here = match &watch {
            Some(Watching::Remove(off)) if off.local => self.remove_here(off),
            _ => false,
        };
        let sent = Instant::now();
        let pending = Pending { xid, op, watch, removed_here, reply, _permit: permit, sent };
        self.pending.push_back(pending);
    }

    fn remove_here(&mut self, off: &WatchOff) -> bool {
        self.watches.remove(&off.path, off.which, &off.client_path)
    }

    /// A local removal made while the session has no connection: the table's waiters go,
    /// and the server's watches are left to the next `SetWatches`, which no longer names
    /// them. Answers the call.
    pub fn remove_unsent(&mut self, call: Call) {
        let removed = match &call.watch {
            Some(Watching::Remove(off)) => self.remove_here(off),
            _ => false,
        };
        let _ = call.reply.send(if removed { Ok(Response::Empty) } else { Err(Error::NoWatcher) });
    }

    /// A persistent watcher's handle at `path` was dropped: when no waiter of any kind is
    /// left there and no request is about to set one, the server's watch is removed too, so
    /// it stops sending events nobody reads.
    pub fn dropped(&mut self, path: &str, out: &mut Vec<u8>) {
        if self.watches.forget(path) {
            self.unwatch_orphan(path.to_owned(), out);
        }
    }

    /// Removes on the server the watches of the paths whose last waiter was found gone
    /// while delivering events.
    pub fn remove_orphans(&mut self, out: &mut Vec<u8>) {
        for path in self.watches.take_orphans() {
            self.unwatch_orphan(path, out);
        }
    }

    fn unwatch_orphan(&mut self, path: String, out: &mut Vec<u8>) {
        let setting = |p: &Pending| matches!(&p.watch, Some(Watching::Set(w)) if w.path == path);
        if self.pending.iter().any(setting) {
            return;
        }
        let (reply, _) = oneshot::channel();
        let request = Request::RemoveWatches { path, watch_type: WatcherType::Any.wire() };
        let call = Call { request, watch: None, reply, permit: None, away: WhileAway::Fail };
        self.send(call, out);
    }

    /// Appends an auth packet; `waiter` hears the server's answer. The credentials are
    /// replayed after every reconnect.
    pub fn auth(
        &mut self,
        scheme: String,
        auth: Vec<u8>,
        waiter: Option<oneshot::Sender<Result<(), Error>>>,
        out: &mut Vec<u8>,
    ) {
        out.extend_from_slice(&auth_frame(&scheme, &auth));
        self.auths.push((scheme, auth));
        self.auth_waiters.push_back(waiter);
    }

    /// What a new connection of the same session sends first: the credentials, then the
    /// watches to re-register (changes after `last_zxid` fire at once). Credentials go first,
    /// as the Java client sends them: a server that enforces authentication answers anything
    /// before them with -124 and closes the connection.
    ///
    /// Every persistent watcher is told to read again (a lagged event): ZooKeeper replays no
    /// persistent-watch event of the gap.
    pub fn resume(&mut self, out: &mut Vec<u8>) {
        self.watches.resumed();
        for (scheme, auth) in &self.auths {
            out.extend_from_slice(&auth_frame(scheme, auth));
            self.auth_waiters.push_back(None);
        }
        for batch in set_watches_batches(self.last_zxid, self.watches.live()) {
            let v2 = !(batch.persistent.is_empty() && batch.persistent_recursive.is_empty());
            let req = Request::SetWatches { v2, watches: batch };
            out.extend_from_slice(&req.to_frame(xid::SET_WATCHES));
        }
    }

    /// Handles one frame body (length prefix removed).
    ///
    /// `last_zxid` rises only with replies to requests, as in the Java client: a
    /// notification's zxid is its transaction's (rzk, ZooKeeper 3.9), and a cut between two
    /// notifications of one transaction must not make `SetWatches` skip the second.
    ///
    /// # Errors
    /// [`Error::Protocol`] for a frame that cannot be decoded or answers no request, and a
    /// `SetWatches` the server refused: the connection is out of step and must be dropped.
    pub fn on_frame(&mut self, frame: &[u8]) -> Result<Frame, Error> {
        let mut r = Reader::new(frame);
        let header = ReplyHeader::read(&mut r).map_err(protocol)?;
        if header.err == ErrorCode::SessionClosedRequireSaslAuth.as_i32() {
            // The server closes the connection after this answer, on any xid: credentials it
            // accepts are missing, and a reconnect would be refused the same way.
            return Ok(self.require_auth(header.xid));
        }
        match header.xid {
            xid::NOTIFICATION => {
                let ev = WatcherEvent::read(&mut r).map_err(protocol)?;
                if let Some(t) = EventType::from_wire(ev.event_type) {
                    let client_path = self.chroot.to_client(ev.path.clone());
                    self.watches.fire(t, &ev.path, header.zxid, &client_path);
                }
                Ok(Frame::Done)
            }
            xid::PING => Ok(Frame::Done),
            xid::SET_WATCHES if header.err == 0 => Ok(Frame::Done),
            xid::SET_WATCHES => {
                Err(Error::Protocol(format!("SetWatches refused with code {}", header.err)))
            }
            xid::AUTH => {
                let failed = header.err != 0;
                if let Some(Some(w)) = self.auth_waiters.pop_front() {
                    let _ = w.send(if failed { Err(Error::AuthFailed) } else { Ok(()) });
                }
                Ok(if failed { Frame::AuthFailed } else { Frame::Done })
            }
            x => {
                let frame = self.on_reply(x, header.err, r)?;
                if header.zxid > self.last_zxid {
                    self.last_zxid = header.zxid;
                }
                Ok(frame)
            }
        }
    }

    /// A -124 answer on `xid`: the request it answers fails with
    /// [`Error::SessionClosedRequireAuth`], and the session ends in `AuthFailed`.
    fn require_auth(&mut self, x: i32) -> Frame {
        let answers = self.pending.front().is_some_and(|p| p.xid == x);
        if let Some(p) = answers.then(|| self.pending.pop_front()).flatten() {
            let _ = p.reply.send(Err(Error::SessionClosedRequireAuth));
        }
        Frame::AuthFailed
    }

    fn on_reply(&mut self, x: i32, err: i32, mut r: Reader<'_>) -> Result<Frame, Error> {
        let Some(p) = self.pending.pop_front() else {
            return Err(Error::Protocol(format!("a reply with xid {x} to no request")));
        };
        if p.xid != x {
            let e = Error::Protocol(format!("a reply with xid {x} where {} was next", p.xid));
            let _ = p.reply.send(Err(Error::ConnectionLoss));
            return Err(e);
        }
        crate::telemetry::request(p.sent.elapsed());
        let result = match Error::from_code(err) {
            Some(e) => Err(e),
            None => Response::read(p.op, &mut r).map_err(protocol),
        };
        let result = match p.watch {
            Some(Watching::Set(w)) => {
                let kind = match (&result, w.kind) {
                    (Ok(_), k) => Some(k),
                    (Err(Error::NoNode), Kind::Data) if p.op == OpCode::Exists => Some(Kind::Exist),
                    _ => None,
                };
                if let Some(kind) = kind {
                    self.watches.add(w.path, kind, w.sink);
                }
                result
            }
            // As the Java client: a local removal succeeds if it removed waiters here,
            // whatever the server said; otherwise the table follows the server's answer.
            Some(Watching::Remove(off)) if off.local && p.removed_here => Ok(Response::Empty),
            Some(Watching::Remove(off)) if !off.local && result.is_ok() => {
                self.remove_here(&off);
                result
            }
            _ => result,
        };
        let closed = p.op == OpCode::CloseSession;
        let _ = p.reply.send(result);
        Ok(if closed { Frame::Closed } else { Frame::Done })
    }

    /// Fails every request awaiting a reply: the connection they were sent on is gone.
    pub fn fail_pending(&mut self, e: &Error) {
        for p in self.pending.drain(..) {
            let _ = p.reply.send(Err(e.clone()));
        }
        for w in self.auth_waiters.drain(..).flatten() {
            let _ = w.send(Err(e.clone()));
        }
    }

    /// Ends the session in `state` (a terminal one): requests fail and watches end.
    pub fn end(&mut self, state: SessionState) {
        self.fail_pending(&Error::ended_in(state).unwrap_or(Error::ClientClosed));
        self.watches.end(state);
    }
}

fn protocol(e: rzk_proto::DecodeError) -> Error {
    Error::Protocol(e.to_string())
}

fn auth_frame(scheme: &str, auth: &[u8]) -> Vec<u8> {
    let req = Request::Auth { auth_type: 0, scheme: scheme.to_owned(), auth: auth.to_vec() };
    req.to_frame(xid::AUTH)
}

/// The live watches as `SetWatches` frames of at most [`SET_WATCHES_MAX_BYTES`] of paths
/// each, relative to `relative_zxid`.
fn set_watches_batches(relative_zxid: i64, live: Vec<(Kind, String)>) -> Vec<SetWatches> {
    let empty = || SetWatches { relative_zxid, ..SetWatches::default() };
    let mut out = Vec::new();
    let mut cur = empty();
    let mut bytes = 0;
    for (kind, path) in live {
        if bytes + path.len() > SET_WATCHES_MAX_BYTES && bytes > 0 {
            out.push(std::mem::replace(&mut cur, empty()));
            bytes = 0;
        }
        bytes += path.len();
        let list = match kind {
            Kind::Data => &mut cur.data,
            Kind::Exist => &mut cur.exist,
            Kind::Child => &mut cur.child,
            Kind::Persistent => &mut cur.persistent,
            Kind::PersistentRecursive => &mut cur.persistent_recursive,
        };
        list.push(path);
    }
    if bytes > 0 {
        out.push(cur);
    }
    out
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
