//! The session task: one per client. It owns the connection, writes what callers send,
//! reads replies and notifications into the [`Core`], pings, and resumes the session on
//! another connection when one fails, until the session ends.
//!
//! Reading and writing happen in one task, on the runtime's own reactor: a notification
//! wakes this task, which hands it straight to the waiting caller's task.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rzk_proto::jute::Reader;
use rzk_proto::{split_frame, xid, ConnectRequest, ConnectResponse, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::core::{Call, Core, Frame, WhileAway};
use crate::transport::{Stream, Transport};
use crate::types::SessionState;
use crate::Error;

/// The largest reply or notification accepted; a longer frame drops the connection.
pub(crate) const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
/// Bytes read from the socket at a time (the buffer grows for a larger frame).
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Bytes of requests gathered before they are written: callers beyond it wait in the
/// command channel (which the outstanding-request permits bound).
const WRITE_BATCH_BYTES: usize = 256 * 1024;
/// The first pause after every server refused a reconnect; it doubles up to the maximum.
const RECONNECT_BACKOFF_MIN: Duration = Duration::from_millis(50);
const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// The client declares its session expired once disconnected for this many session timeouts
/// since it last heard from the server: by then any server has expired it, and a caller
/// waiting for a reconnect learns it without reaching one.
const LOCAL_EXPIRY: (u32, u32) = (7, 5);
/// How long a close waits for the server's answer to closeSession.
const CLOSE_WAIT_MAX: Duration = Duration::from_secs(3);

/// What callers send the task.
pub(crate) enum Command {
    Call(Call),
    Auth { scheme: String, auth: Vec<u8>, reply: oneshot::Sender<Result<(), Error>> },
    Close(Option<oneshot::Sender<()>>),
}

/// The session's identity and the servers it may resume on.
pub(crate) struct Endpoint {
    pub hosts: Vec<String>,
    pub next: usize,
    pub transport: Arc<dyn Transport>,
    pub requested_timeout: Duration,
    /// The connection timeout as configured; `None` for two fifths of the session timeout.
    pub configured_connection_timeout: Option<Duration>,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    /// The negotiated timeout (the requested one before the first handshake).
    pub timeout: Duration,
}

/// A connection with its handshake done.
pub(crate) type Io = Box<dyn Stream>;

impl Endpoint {
    /// How long a connection attempt may take, and a connection may stay silent before it
    /// counts as lost: as configured, or two fifths of the session timeout, which leaves
    /// time for two more attempts before the server could expire the session.
    pub fn connection_timeout(&self) -> Duration {
        self.configured_connection_timeout.unwrap_or(self.timeout * 2 / 5)
    }

    /// Opens a connection to the next host and does the handshake, with `last_zxid` as the
    /// client's last seen zxid.
    ///
    /// # Errors
    /// [`Error::SessionExpired`] when the server no longer knows the session;
    /// [`Error::ConnectionLoss`] for anything else (refused, timed out, closed).
    pub async fn open(&mut self, last_zxid: i64) -> Result<(Io, ConnectResponse), Error> {
        let host = self.hosts[self.next % self.hosts.len()].clone();
        self.next = self.next.wrapping_add(1);
        let timeout_ms = i32::try_from(self.requested_timeout.as_millis()).unwrap_or(i32::MAX);
        let req = ConnectRequest {
            last_zxid_seen: last_zxid,
            session_id: self.session_id,
            passwd: if self.passwd.is_empty() { vec![0; 16] } else { self.passwd.clone() },
            read_only: Some(false),
            ..ConnectRequest::new_session(timeout_ms)
        };
        let attempt = async {
            let mut io = self.transport.open(&host).await?;
            let mut w = rzk_proto::jute::Writer::frame();
            req.write(&mut w);
            io.write_all(&w.finish_frame()).await?;
            io.flush().await?;
            let mut prefix = [0; 4];
            io.read_exact(&mut prefix).await?;
            let len = usize::try_from(i32::from_be_bytes(prefix)).unwrap_or(usize::MAX);
            if len > MAX_FRAME_BYTES {
                return Err(std::io::Error::other("handshake reply too long"));
            }
            let mut body = vec![0; len];
            io.read_exact(&mut body).await?;
            let resp = ConnectResponse::read(&mut Reader::new(&body))
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            Ok((io, resp))
        };
        match tokio::time::timeout(self.connection_timeout(), attempt).await {
            Ok(Ok((_, resp))) if resp.timeout_ms <= 0 => Err(Error::SessionExpired),
            Ok(Ok(ok)) => Ok(ok),
            Ok(Err(e)) => {
                tracing::debug!(%host, error = %e, "connection attempt failed");
                Err(Error::ConnectionLoss)
            }
            Err(_) => {
                tracing::debug!(%host, "connection attempt timed out");
                Err(Error::ConnectionLoss)
            }
        }
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
    /// Requests made while disconnected, sent once the session is resumed.
    pub deferred: Vec<Command>,
    /// The credentials to send on the first connection.
    pub initial_auth: Vec<(String, Vec<u8>)>,
    /// When the server was last heard from: past [`LOCAL_EXPIRY`] times the session timeout,
    /// the server has expired the session, and a reconnect stops trying.
    pub last_heard: Instant,
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
            match self.serve(io, out).await {
                Outcome::Closed(done) => return self.finish(SessionState::Closed, done),
                Outcome::AuthFailed => return self.finish(SessionState::AuthFailed, None),
                Outcome::Lost(why) => {
                    tracing::debug!(session = format_args!("{:#x}", self.endpoint.session_id), %why, "connection lost");
                    self.core.fail_pending(&Error::ConnectionLoss);
                    self.publish(SessionState::Disconnected);
                    match self.reconnect().await {
                        Ok(next) => io = next,
                        Err((state, done)) => return self.finish(state, done),
                    }
                    out = Vec::new();
                    self.core.resume(&mut out);
                    self.publish(SessionState::SyncConnected);
                }
            }
            for c in std::mem::take(&mut self.deferred) {
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
        for c in std::mem::take(&mut self.deferred) {
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
        }
        None
    }

    /// Tries the hosts in turn, with a back-off after each round, until one resumes the
    /// session. `Err`: the state the session ended in (expired, or closed meanwhile), and the
    /// close to answer once that is published.
    async fn reconnect(&mut self) -> Result<Io, (SessionState, Option<oneshot::Sender<()>>)> {
        let closed = |done| (SessionState::Closed, done);
        let mut backoff = RECONNECT_BACKOFF_MIN;
        loop {
            for _ in 0..self.endpoint.hosts.len() {
                let expiry =
                    self.last_heard + self.endpoint.timeout * LOCAL_EXPIRY.0 / LOCAL_EXPIRY.1;
                if Instant::now() >= expiry {
                    return Err((SessionState::Expired, None));
                }
                let attempt = self.endpoint.open(self.core.last_zxid);
                match while_away(&mut self.cmd, &mut self.deferred, attempt)
                    .await
                    .map_err(closed)?
                {
                    Ok((io, _)) => return Ok(io),
                    Err(Error::SessionExpired) => return Err((SessionState::Expired, None)),
                    Err(_) => {}
                }
            }
            let pause = tokio::time::sleep(backoff);
            while_away(&mut self.cmd, &mut self.deferred, pause).await.map_err(closed)?;
            backoff = (backoff * 2).min(RECONNECT_BACKOFF_MAX);
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
        loop {
            let ping_at = last_write + ping_every;
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
                    self.last_heard = last_read;
                    match self.frames(&mut rbuf, &mut filled) {
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
/// connection, or fail at once if their caller asked so ([`WhileAway::Fail`]). `Err`: a
/// close was asked (or every handle is gone), with the close to answer.
async fn while_away<T>(
    cmd: &mut mpsc::UnboundedReceiver<Command>,
    deferred: &mut Vec<Command>,
    fut: impl Future<Output = T>,
) -> Result<T, Option<oneshot::Sender<()>>> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            r = &mut fut => return Ok(r),
            c = cmd.recv() => match c {
                Some(Command::Close(done)) => return Err(done),
                None => return Err(None),
                Some(Command::Call(c)) if c.away == WhileAway::Fail => {
                    let _ = c.reply.send(Err(Error::ConnectionLoss));
                }
                Some(c) => deferred.push(c),
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
        Command::Close(None) => {}
    }
}
