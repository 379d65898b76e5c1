//! The session task: one per client. It owns the connection, writes what callers send,
//! reads replies and notifications into the [`Core`], pings, and resumes the session on
//! another connection when one fails, until the session ends.
//!
//! Reading and writing happen in one task, on the runtime's own reactor: a notification
//! wakes this task, which hands it straight to the waiting caller's task.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rzk_proto::{split_frame, xid, ConnectRequest, ConnectResponse, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::core::{Call, Core, Frame, Watching, WhileAway};
use crate::handshake::{attempt, Attempt, Io, MAX_FRAME_BYTES};
use crate::read_only::{self, RwSearch};
use crate::reconnect::{attempt_timeout, Backoff, Hosts};
use crate::sasl::SaslLogin;
use crate::telemetry;
use crate::transport::Transport;
use crate::types::{SessionId, SessionInfo, SessionState};
use crate::Error;

/// Bytes read from the socket at a time (the buffer grows for a larger frame).
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Bytes of requests gathered before they are written: callers beyond it wait in the
/// command channel (which the outstanding-request permits bound).
const WRITE_BATCH_BYTES: usize = 256 * 1024;
/// A request made while disconnected waits at most this many session timeouts for the
/// session to be resumed, then fails with [`Error::ConnectionLoss`]. The client never
/// declares the session expired on its own (only a server can, and a new ZAB leader resumes
/// sessions a slow election kept away), so this bound is what ends such a wait; the Java
/// client fails these requests sooner, at the next failed attempt.
const DEFERRED_WAIT_MAX: (u32, u32) = (1, 1);
/// How long a close waits for the server's answer to closeSession.
const CLOSE_WAIT_MAX: Duration = Duration::from_secs(3);

/// What callers send the task.
pub(crate) enum Command {
    Call(Call),
    Auth {
        scheme: String,
        auth: Vec<u8>,
        reply: oneshot::Sender<Result<(), Error>>,
    },
    Close(Option<oneshot::Sender<()>>),
    /// A persistent watcher's handle at this server path was dropped. One per watcher, so
    /// these are bounded by the watchers the caller held.
    Dropped(String),
}

/// The session's identity and the servers it may resume on.
pub(crate) struct Endpoint {
    pub hosts: Hosts,
    /// The host of the current (or last) connection, for the logs.
    pub current: String,
    pub transport: Arc<dyn Transport>,
    pub requested_timeout: Duration,
    /// The connection timeout as configured; `None` for two fifths of the session timeout.
    pub configured_connection_timeout: Option<Duration>,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    /// The negotiated timeout (the requested one before the first handshake), updated by
    /// every handshake: members of an ensemble may bound it differently.
    pub timeout: Duration,
    /// The negotiated timeout in milliseconds, shared with [`crate::Client::session_timeout`].
    pub shared_timeout_ms: Arc<AtomicU64>,
    pub backoff: Backoff,
    /// The SASL login every connection runs before anything else, if any.
    pub sasl: Option<SaslLogin>,
    /// Whether a read-only server may serve the session (`read_only.rs`).
    pub can_be_read_only: bool,
    /// Whether a read-write server has served the session: until then each connection asks
    /// for a new session, since a read-only server's session is its own.
    pub seen_rw: bool,
    /// Whether the current (or last) connection is to a read-only server.
    pub read_only: bool,
    /// The session's id and password, shared with [`crate::Client::session`]: they change
    /// when the session moves from a read-only server to a read-write one.
    pub shared_session: Arc<Mutex<SessionInfo>>,
}

impl Endpoint {
    /// The state of a session whose connection was just made.
    pub fn connected_state(&self) -> SessionState {
        if self.read_only {
            SessionState::ConnectedReadOnly
        } else {
            SessionState::SyncConnected
        }
    }

    /// How long a connection may stay silent before it counts as lost: as configured, or two
    /// fifths of the session timeout, which leaves time for a few more attempts before the
    /// server could expire the session.
    pub fn connection_timeout(&self) -> Duration {
        self.configured_connection_timeout.unwrap_or(self.timeout * 2 / 5)
    }

    /// Opens a connection to the next host and does the handshake, with `last_zxid` as the
    /// client's last seen zxid; on success the negotiated timeout is taken.
    ///
    /// # Errors
    /// [`Error::SessionExpired`] when the server no longer knows the session;
    /// [`Error::SaslAuthFailed`] when the SASL exchange failed (the session is over);
    /// [`Error::ConnectionLoss`] for anything else (refused, timed out, closed).
    pub async fn open(&mut self, last_zxid: i64) -> Result<(Io, ConnectResponse), Error> {
        let host = self.hosts.next().to_owned();
        let timeout_ms = i32::try_from(self.requested_timeout.as_millis()).unwrap_or(i32::MAX);
        let resume = self.seen_rw && !self.passwd.is_empty();
        let req = ConnectRequest {
            last_zxid_seen: last_zxid,
            session_id: if resume { self.session_id } else { 0 },
            passwd: if resume { self.passwd.clone() } else { vec![0; 16] },
            read_only: Some(self.can_be_read_only),
            ..ConnectRequest::new_session(timeout_ms)
        };
        let attempt = attempt(self.transport.as_ref(), &host, &req, self.sasl.as_ref());
        let limit = attempt_timeout(self.timeout, self.connection_timeout(), self.hosts.len());
        let session = format!("{:#x}", self.session_id);
        let (outcome, result) = match tokio::time::timeout(limit, attempt).await {
            Ok(Ok((_, resp))) if resp.timeout_ms <= 0 => {
                tracing::info!(%host, %session, "the server says the session expired");
                ("expired", Err(Error::SessionExpired))
            }
            Ok(Ok((io, resp))) => {
                self.took(&host, &resp);
                ("connected", Ok((io, resp)))
            }
            Ok(Err(Attempt::Refused(e))) => {
                tracing::warn!(%host, %session, error = %e, "SASL authentication failed");
                ("auth_failed", Err(e))
            }
            Ok(Err(Attempt::Io(e))) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                tracing::info!(%host, %session, last_zxid, error = %e,
                    "the server closed the connection during the handshake (behind the client's \
                     zxid, read-only or not serving): trying another");
                ("refused", Err(Error::ConnectionLoss))
            }
            Ok(Err(Attempt::Io(e))) => {
                tracing::debug!(%host, %session, error = %e, "connection attempt failed");
                ("failed", Err(Error::ConnectionLoss))
            }
            Err(_) => {
                tracing::debug!(%host, %session, ?limit, "connection attempt timed out");
                ("timed_out", Err(Error::ConnectionLoss))
            }
        };
        telemetry::attempt(outcome);
        result
    }

    /// Takes a handshake's answer: the session's identity on the first, the negotiated
    /// timeout on every one.
    fn took(&mut self, host: &str, resp: &ConnectResponse) {
        let timeout = Duration::from_millis(u64::try_from(resp.timeout_ms).unwrap_or(0));
        let session = format!("{:#x}", resp.session_id);
        let read_only = resp.read_only == Some(true);
        if read_only {
            tracing::info!(%host, %session, ?timeout, "read-only session established");
        } else if resp.session_id != self.session_id {
            tracing::info!(%host, %session, ?timeout, "session established");
        } else if timeout != self.timeout {
            tracing::warn!(%host, %session, ?timeout, was = ?self.timeout,
                "session resumed with a renegotiated timeout");
        } else {
            tracing::info!(%host, %session, "session resumed");
        }
        self.read_only = read_only;
        self.seen_rw |= !read_only;
        if resp.session_id != self.session_id || resp.passwd != self.passwd {
            let info =
                SessionInfo { id: SessionId(resp.session_id), password: resp.passwd.clone() };
            *self.shared_session.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = info;
        }
        self.session_id = resp.session_id;
        self.passwd.clone_from(&resp.passwd);
        self.timeout = timeout;
        self.shared_timeout_ms
            .store(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX), Ordering::Release);
        host.clone_into(&mut self.current);
    }
}

/// Why serving one connection ended.
enum Outcome {
    Lost(String),
    Closed(Option<oneshot::Sender<()>>),
    AuthFailed,
}

/// The task.
pub(crate) struct Task {
    pub core: Core,
    pub endpoint: Endpoint,
    pub cmd: mpsc::UnboundedReceiver<Command>,
    pub state: watch::Sender<SessionState>,
    pub states: broadcast::Sender<SessionState>,
    /// Requests made while disconnected, with when they were made, sent once the session
    /// is resumed (or failed after [`DEFERRED_WAIT_MAX`]).
    pub deferred: Vec<(Instant, Command)>,
    /// The credentials to send on the first connection.
    pub initial_auth: Vec<(String, Vec<u8>)>,
}

impl Task {
    /// Serves the session from its first connection until it ends.
    pub async fn run(mut self, first: Io) {
        let mut out = Vec::new();
        for (scheme, auth) in std::mem::take(&mut self.initial_auth) {
            self.core.auth(scheme, auth, None, &mut out);
        }
        let mut io = first;
        loop {
            let connected_at = Instant::now();
            match self.serve(io, out).await {
                Outcome::Closed(done) => return self.finish(SessionState::Closed, done),
                Outcome::AuthFailed => return self.finish(SessionState::AuthFailed, None),
                Outcome::Lost(why) => {
                    let lost_at = Instant::now();
                    tracing::info!(
                        host = %self.endpoint.current,
                        session = format_args!("{:#x}", self.endpoint.session_id),
                        %why,
                        "connection lost"
                    );
                    telemetry::disconnected();
                    self.core.fail_pending(&Error::ConnectionLoss);
                    self.publish(SessionState::Disconnected);
                    match self.reconnect(lost_at - connected_at).await {
                        Ok(next) => io = next,
                        Err((state, done)) => return self.finish(state, done),
                    }
                    telemetry::reconnected(lost_at.elapsed());
                    out = Vec::new();
                    self.core.resume(&mut out);
                    self.publish(self.endpoint.connected_state());
                }
            }
            for (_, c) in std::mem::take(&mut self.deferred) {
                if let Some(Outcome::Closed(done)) = self.take(c, &mut out) {
                    return self.finish(SessionState::Closed, done);
                }
            }
        }
    }

    fn publish(&self, s: SessionState) {
        self.state.send_replace(s);
        let _ = self.states.send(s);
    }

    fn finish(mut self, state: SessionState, done: Option<oneshot::Sender<()>>) {
        self.core.end(state);
        let e = Error::ended_in(state).unwrap_or(Error::ClientClosed);
        for (_, c) in std::mem::take(&mut self.deferred) {
            fail(c, &e);
        }
        self.publish(state);
        self.cmd.close();
        while let Ok(c) = self.cmd.try_recv() {
            fail(c, &e);
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Puts a command's frame in `out`; a close is answered with the outcome to return.
    fn take(&mut self, c: Command, out: &mut Vec<u8>) -> Option<Outcome> {
        match c {
            Command::Call(call) => self.core.send(call, out),
            Command::Auth { scheme, auth, reply } => self.core.auth(scheme, auth, Some(reply), out),
            Command::Close(done) => return Some(Outcome::Closed(done)),
            Command::Dropped(path) => self.core.dropped(&path, out),
        }
        None
    }

    /// Tries the hosts in turn until one resumes the session: after a random pause (a
    /// back-off if the lost connection had served for less than a moment), then with a
    /// back-off after each round in which every host failed (`reconnect.rs`). `served`: how
    /// long the lost connection served. `Err`: the state the session ended in (expired, or
    /// closed meanwhile), and the close to answer once that is published.
    async fn reconnect(
        &mut self,
        served: Duration,
    ) -> Result<Io, (SessionState, Option<oneshot::Sender<()>>)> {
        let closed = |done| (SessionState::Closed, done);
        let mut pause = self.endpoint.backoff.before_reconnect(served, self.endpoint.timeout);
        loop {
            let sleep = tokio::time::sleep(pause);
            while_away(&mut self.cmd, &mut self.deferred, &mut self.core, sleep)
                .await
                .map_err(closed)?;
            for _ in 0..self.endpoint.hosts.len() {
                self.fail_stale_deferred();
                let attempt = self.endpoint.open(self.core.last_zxid);
                match while_away(&mut self.cmd, &mut self.deferred, &mut self.core, attempt)
                    .await
                    .map_err(closed)?
                {
                    Ok((io, _)) => return Ok(io),
                    Err(Error::SessionExpired) => return Err((SessionState::Expired, None)),
                    Err(Error::SaslAuthFailed { .. }) => {
                        return Err((SessionState::AuthFailed, None))
                    }
                    Err(_) => {}
                }
            }
            pause = self.endpoint.backoff.after_failure();
        }
    }

    /// Fails the requests that have waited [`DEFERRED_WAIT_MAX`] for a reconnect.
    fn fail_stale_deferred(&mut self) {
        let max = self.endpoint.timeout * DEFERRED_WAIT_MAX.0 / DEFERRED_WAIT_MAX.1;
        let now = Instant::now();
        let (stale, kept) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|(at, c)| now - *at >= max && !matches!(c, Command::Close(_)));
        self.deferred = kept;
        for (_, c) in stale {
            fail(c, &Error::ConnectionLoss);
        }
    }

    /// Serves one connection, starting by writing `out`.
    async fn serve(&mut self, io: Io, mut out: Vec<u8>) -> Outcome {
        let (mut rd, mut wr) = tokio::io::split(io);
        let mut rbuf = vec![0; READ_CHUNK_BYTES];
        let mut filled = 0;
        // A ping well inside the read timeout keeps an idle connection from counting as lost,
        // and one every third of the session timeout keeps the session alive whatever the
        // read timeout.
        let read_timeout = self.endpoint.connection_timeout();
        let ping_every = (read_timeout * 3 / 8).min(self.endpoint.timeout / 3);
        let mut last_read = Instant::now();
        let mut last_write = Instant::now();
        let mut flushed = true;
        let mut closing: Option<(Option<oneshot::Sender<()>>, Instant)> = None;
        // On a read-only server: when to ask the next host whether it is read-write, and
        // the question in flight.
        let mut rw_search = RwSearch::default();
        let mut probe_at = self.endpoint.read_only.then(|| Instant::now() + rw_search.next_wait());
        let mut probe: Option<Probe> = None;
        loop {
            let ping_at = last_write + ping_every;
            let probe_due = probe_at.unwrap_or(last_read + read_timeout);
            let dead_at = match &closing {
                Some((_, at)) => (*at).min(last_read + read_timeout),
                None => last_read + read_timeout,
            };
            tokio::select! {
                biased;
                r = rd.read(&mut rbuf[filled..]) => {
                    let n = match r {
                        Ok(0) => return self.lost_or_closed(closing, "the server closed the connection"),
                        Ok(n) => n,
                        Err(e) => return self.lost_or_closed(closing, &e.to_string()),
                    };
                    filled += n;
                    last_read = Instant::now();
                    let read = self.frames(&mut rbuf, &mut filled);
                    self.core.remove_orphans(&mut out);
                    match read {
                        Ok(None) => {}
                        Ok(Some(Frame::Closed)) => {
                            return Outcome::Closed(closing.and_then(|(done, _)| done));
                        }
                        Ok(Some(_)) => return Outcome::AuthFailed,
                        Err(why) => return self.lost_or_closed(closing, &why),
                    }
                }
                c = self.cmd.recv(), if closing.is_none() && out.len() < WRITE_BATCH_BYTES => {
                    let mut next = c;
                    loop {
                        let c = match next.take() {
                            // Every client handle is gone: close the session.
                            None => Command::Close(None),
                            Some(c) => c,
                        };
                        if let Some(Outcome::Closed(done)) = self.take(c, &mut out) {
                            let (tx, _) = oneshot::channel();
                            let call = Call { request: Request::CloseSession, watch: None, reply: tx, permit: None, away: WhileAway::Defer };
                            self.core.send(call, &mut out);
                            closing = Some((done, Instant::now() + CLOSE_WAIT_MAX.min(self.endpoint.timeout)));
                            break;
                        }
                        if out.len() >= WRITE_BATCH_BYTES {
                            break;
                        }
                        match self.cmd.try_recv() {
                            Ok(c) => next = Some(c),
                            Err(_) => break,
                        }
                    }
                }
                w = write_or_flush(&mut wr, &out), if !out.is_empty() || !flushed => match w {
                    Ok(0) => flushed = true,
                    Ok(n) => {
                        out.drain(..n);
                        last_write = Instant::now();
                        flushed = false;
                    }
                    Err(e) => return self.lost_or_closed(closing, &e.to_string()),
                },
                () = tokio::time::sleep_until(ping_at), if out.is_empty() => {
                    out.extend_from_slice(&Request::Ping.to_frame(xid::PING));
                }
                () = tokio::time::sleep_until(probe_due), if probe_at.is_some() && probe.is_none() => {
                    let host = self.endpoint.hosts.next().to_owned();
                    let transport = self.endpoint.transport.clone();
                    probe = Some(Box::pin(async move {
                        read_only::probe(transport.as_ref(), &host).await.then_some(host)
                    }));
                }
                found = answer(&mut probe) => {
                    probe = None;
                    match found {
                        Some(host) if closing.is_none() => {
                            tracing::info!(%host, session = format_args!("{:#x}", self.endpoint.session_id),
                                "a read-write server answered: leaving the read-only one");
                            self.endpoint.hosts.prefer(&host);
                            return Outcome::Lost(format!("{host} is a read-write server"));
                        }
                        _ => probe_at = Some(Instant::now() + rw_search.next_wait()),
                    }
                }
                () = tokio::time::sleep_until(dead_at) => {
                    return self.lost_or_closed(closing, "no answer within the read timeout");
                }
            }
        }
    }

    fn lost_or_closed(
        &self,
        closing: Option<(Option<oneshot::Sender<()>>, Instant)>,
        why: &str,
    ) -> Outcome {
        match closing {
            Some((done, _)) => Outcome::Closed(done),
            None => Outcome::Lost(why.to_owned()),
        }
    }

    /// Handles every whole frame in `buf[..*filled]`, keeping the rest; `Some` for a frame
    /// that ends the connection.
    fn frames(&mut self, buf: &mut Vec<u8>, filled: &mut usize) -> Result<Option<Frame>, String> {
        let mut start = 0;
        let mut end = None;
        while end.is_none() {
            match split_frame(&buf[start..*filled], MAX_FRAME_BYTES) {
                Ok(Some(len)) => {
                    let frame = &buf[start + 4..start + 4 + len];
                    match self.core.on_frame(frame) {
                        Ok(Frame::Done) => {}
                        Ok(f) => end = Some(f),
                        Err(e) => return Err(e.to_string()),
                    }
                    start += 4 + len;
                }
                Ok(None) => break,
                Err(e) => return Err(e.to_string()),
            }
        }
        buf.copy_within(start..*filled, 0);
        *filled -= start;
        // Room for the rest of a frame longer than the buffer.
        if *filled >= 4 {
            let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            let need = usize::try_from(len).unwrap_or(0).saturating_add(4);
            if need > buf.len() {
                buf.resize(need.min(MAX_FRAME_BYTES + 4), 0);
            }
        }
        if *filled == buf.len() {
            buf.resize(buf.len() + READ_CHUNK_BYTES, 0);
        } else if *filled == 0 && buf.len() > READ_CHUNK_BYTES {
            buf.truncate(READ_CHUNK_BYTES);
            buf.shrink_to_fit();
        }
        Ok(end)
    }
}

/// A probe of one host for a read-write server: the host, if it is one.
type Probe = std::pin::Pin<Box<dyn Future<Output = Option<String>> + Send>>;

/// The answer of the probe in flight; never, when there is none.
async fn answer(probe: &mut Option<Probe>) -> Option<String> {
    match probe {
        Some(p) => p.await,
        None => std::future::pending().await,
    }
}

/// Writes some of `out` (the count), or, when it is empty, flushes what a TLS stream has
/// buffered (0). Cancellation safe: a write that does not complete wrote nothing.
async fn write_or_flush(wr: &mut tokio::io::WriteHalf<Io>, out: &[u8]) -> std::io::Result<usize> {
    if out.is_empty() {
        wr.flush().await.map(|()| 0)
    } else {
        match wr.write(out).await? {
            0 => Err(std::io::ErrorKind::WriteZero.into()),
            n => Ok(n),
        }
    }
}

/// Waits for `fut` while disconnected: requests made meanwhile wait for the next
/// connection, or fail at once if their caller asked so ([`WhileAway::Fail`]); a local watch
/// removal is done at once, and a dropped watcher needs nothing (the next `SetWatches` leaves
/// it out). `Err`: a close was asked (or every handle is gone), with the close to answer.
async fn while_away<T>(
    cmd: &mut mpsc::UnboundedReceiver<Command>,
    deferred: &mut Vec<(Instant, Command)>,
    core: &mut Core,
    fut: impl Future<Output = T>,
) -> Result<T, Option<oneshot::Sender<()>>> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            biased;
            r = &mut fut => return Ok(r),
            c = cmd.recv() => match c {
                Some(Command::Close(done)) => return Err(done),
                None => return Err(None),
                Some(Command::Call(c)) if c.away == WhileAway::Fail => {
                    let _ = c.reply.send(Err(Error::ConnectionLoss));
                }
                Some(Command::Call(c))
                    if matches!(&c.watch, Some(Watching::Remove(off)) if off.local) =>
                {
                    core.remove_unsent(c);
                }
                Some(Command::Dropped(_)) => {}
                Some(c) => deferred.push((Instant::now(), c)),
            },
        }
    }
}

fn fail(c: Command, e: &Error) {
    match c {
        Command::Call(call) => {
            let _ = call.reply.send(Err(e.clone()));
        }
        Command::Auth { reply, .. } => {
            let _ = reply.send(Err(e.clone()));
        }
        Command::Close(Some(done)) => {
            let _ = done.send(());
        }
        Command::Close(None) | Command::Dropped(_) => {}
    }
}
