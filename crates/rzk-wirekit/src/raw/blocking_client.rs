//! [`BlockingClient`]: the raw client on `std::net`, one session per thread.

use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use rzk_proto::{xid, ConnectRequest, ConnectResponse, Request, WatcherEvent};

use super::error::RawError;
use super::wire::{
    answers_request, as_notification, connect_response, frame_len, handshake_frame, is_ping_reply,
    new_session, Reply,
};

/// A raw ZooKeeper connection read and written with blocking calls. See the [module
/// documentation](super) for what it does and does not do.
///
/// Reads wait as long as the socket's read timeout allows (none unless set through
/// [`stream`](Self::stream) or [`keep_alive`](Self::keep_alive)); a timeout is an error
/// ([`RawError::Io`] of kind `WouldBlock` or `TimedOut`), except with `keep_alive`.
#[derive(Debug)]
pub struct BlockingClient {
    r: BufReader<TcpStream>,
    w: TcpStream,
    /// Ping whenever a read has waited this long (the socket's read timeout).
    keep_alive: Option<Duration>,
    /// The server's address as the caller named it, for errors.
    pub(super) addr: String,
}

impl BlockingClient {
    /// A TCP connection to `addr` with Nagle's algorithm off, and no session yet: follow with
    /// [`handshake`](Self::handshake), or write anything with [`write_raw`](Self::write_raw).
    pub fn open(addr: impl ToSocketAddrs + std::fmt::Display) -> Result<BlockingClient, RawError> {
        let stream = TcpStream::connect(&addr)
            .map_err(|source| RawError::Connect { addr: addr.to_string(), source })?;
        let mut c = BlockingClient::from_stream(stream)?;
        c.addr = addr.to_string();
        Ok(c)
    }

    /// Wraps a connected socket (one with options of the caller's, such as a fixed receive
    /// buffer), turning Nagle's algorithm off.
    pub fn from_stream(stream: TcpStream) -> Result<BlockingClient, RawError> {
        stream.set_nodelay(true)?;
        let r = BufReader::new(stream.try_clone()?);
        let addr = stream.peer_addr()?.to_string();
        Ok(BlockingClient { r, w: stream, keep_alive: None, addr })
    }

    /// A new session with `addr`, asking for `timeout`; the server's answer says what it
    /// granted.
    pub fn connect(
        addr: impl ToSocketAddrs + std::fmt::Display,
        timeout: Duration,
    ) -> Result<(BlockingClient, ConnectResponse), RawError> {
        BlockingClient::connect_with(addr, &new_session(timeout))
    }

    /// A session with `addr` from any handshake, for instance [`resume`](super::resume).
    pub fn connect_with(
        addr: impl ToSocketAddrs + std::fmt::Display,
        req: &ConnectRequest,
    ) -> Result<(BlockingClient, ConnectResponse), RawError> {
        let mut c = BlockingClient::open(addr)?;
        let resp = c.handshake(req)?;
        Ok((c, resp))
    }

    /// Sends the handshake `req` and reads the server's answer. A server that closes the
    /// connection instead gives [`RawError::Handshake`].
    pub fn handshake(&mut self, req: &ConnectRequest) -> Result<ConnectResponse, RawError> {
        self.write_raw(&handshake_frame(req))?;
        let frame = self
            .read_frame()
            .map_err(|e| RawError::Handshake { addr: self.addr.clone(), source: Box::new(e) })?;
        connect_response(&frame)
    }

    /// The socket, for its options (read and write timeouts, addresses).
    pub fn stream(&self) -> &TcpStream {
        &self.w
    }

    /// With `Some(interval)`, a read that has waited `interval` sends a ping and waits on
    /// instead of failing, so that a session waiting longer than its timeout for an event
    /// stays alive; readers skip the pings' replies where they skip notifications
    /// ([`call`](Self::call), [`read_notification`](Self::read_notification)). With `None`,
    /// reads wait without limit.
    pub fn keep_alive(&mut self, interval: Option<Duration>) -> Result<(), RawError> {
        self.w.set_read_timeout(interval)?;
        self.keep_alive = interval;
        Ok(())
    }

    /// Writes `bytes` as they are: a frame, several, part of one, or anything else.
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<(), RawError> {
        Ok(self.w.write_all(bytes)?)
    }

    /// Sends `req` with `xid`, without waiting for its reply.
    pub fn send(&mut self, req: &Request, xid: i32) -> Result<(), RawError> {
        self.write_raw(&req.to_frame(xid))
    }

    /// Sends every request with its xid in one write (pipelined); read their replies, in
    /// order, with [`read_reply`](Self::read_reply).
    pub fn send_all<'a>(
        &mut self,
        reqs: impl IntoIterator<Item = (&'a Request, i32)>,
    ) -> Result<(), RawError> {
        let bytes: Vec<u8> = reqs.into_iter().flat_map(|(req, xid)| req.to_frame(xid)).collect();
        self.write_raw(&bytes)
    }

    /// Sends a ping without waiting for its reply.
    pub fn send_ping(&mut self) -> Result<(), RawError> {
        self.send(&Request::Ping, xid::PING)
    }

    /// The next frame's body, length prefix removed, whatever it holds.
    pub fn read_frame(&mut self) -> Result<Vec<u8>, RawError> {
        let mut prefix = [0; 4];
        self.read_full(&mut prefix)?;
        let mut body = vec![0; frame_len(prefix)?];
        self.read_full(&mut body)?;
        Ok(body)
    }

    /// The next frame: a reply, a notification or a ping's reply.
    pub fn read_reply(&mut self) -> Result<Reply, RawError> {
        Reply::parse(self.read_frame()?)
    }

    /// Sends `req` with `xid` and returns the first reply that answers a request, skipping
    /// notifications and pings' replies (its xid is not checked: see
    /// [`read_reply`](Self::read_reply) for that).
    pub fn call(&mut self, req: &Request, xid: i32) -> Result<Reply, RawError> {
        self.send(req, xid)?;
        loop {
            let reply = self.read_reply()?;
            if answers_request(&reply) {
                return Ok(reply);
            }
        }
    }

    /// The next watch notification, skipping pings' replies; a reply to a request is an
    /// error ([`RawError::UnexpectedReply`]).
    pub fn read_notification(&mut self) -> Result<WatcherEvent, RawError> {
        loop {
            if let Some(event) = as_notification(&self.read_reply()?)? {
                return Ok(event);
            }
        }
    }

    /// Sends a ping and waits for its reply, skipping notifications; a reply to a request is
    /// an error ([`RawError::UnexpectedReply`]).
    pub fn ping(&mut self) -> Result<(), RawError> {
        self.send_ping()?;
        while !is_ping_reply(&self.read_reply()?)? {}
        Ok(())
    }

    /// Ends the session (closeSession) and waits for the server's reply, then the connection.
    pub fn close(mut self) -> Result<(), RawError> {
        self.call(&Request::CloseSession, 1)?;
        let _ = self.w.shutdown(std::net::Shutdown::Both);
        Ok(())
    }

    /// Reads and drops whatever arrives until the server closes the connection (`true`), or
    /// a read fails otherwise, for instance at the read timeout (`false`).
    pub fn closed_by_server(&mut self) -> bool {
        let mut buf = [0; 1024];
        loop {
            match self.r.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return e.kind() == ErrorKind::ConnectionReset,
            }
        }
    }

    /// Everything the server sends until it closes the connection, as text: the answer to
    /// a four-letter word written with [`write_raw`](Self::write_raw).
    pub fn read_to_close(&mut self) -> Result<String, RawError> {
        let mut out = String::new();
        self.r.read_to_string(&mut out)?;
        Ok(out)
    }

    /// Asks `addr` a four-letter word (`ruok`, `srvr`, ...) on a connection of its own; the
    /// server's whole answer.
    pub fn four_letter_word(
        addr: impl ToSocketAddrs + std::fmt::Display,
        word: &str,
    ) -> Result<String, RawError> {
        let mut c = BlockingClient::open(addr)?;
        c.write_raw(word.as_bytes())?;
        c.read_to_close()
    }

    /// Fills `buf`; with [`keep_alive`](Self::keep_alive), pings whenever the socket has been
    /// silent for its interval.
    fn read_full(&mut self, buf: &mut [u8]) -> Result<(), RawError> {
        let mut at = 0;
        while at < buf.len() {
            match self.r.read(&mut buf[at..]) {
                Ok(0) => {
                    let closed = "the server closed the session's connection";
                    return Err(std::io::Error::new(ErrorKind::UnexpectedEof, closed).into());
                }
                Ok(n) => at += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e)
                    if self.keep_alive.is_some()
                        && matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    self.send_ping()?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
