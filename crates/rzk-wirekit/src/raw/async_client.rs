//! [`AsyncClient`]: the raw client on tokio, many sessions per thread.

use rzk_client::tls::TlsConfig;
use rzk_proto::{split_frame, xid, ConnectRequest, ConnectResponse, Request, WatcherEvent};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::blocking_client::BlockingClient;
use super::error::RawError;
use super::transport::{self, Reader, Writer};
use super::wire::{
    answers_request, as_notification, connect_response, frame_len, handshake_frame, is_ping_reply,
    new_session, Reply,
};

/// Bytes read from the socket at a time: room for many pipelined replies per system call.
const READ_BUFFER_BYTES: usize = 256 * 1024;

/// A raw ZooKeeper connection on tokio. See the [module documentation](super) for what it
/// does and does not do.
///
/// # Cancellation safety
/// Only [`readable`](Self::readable) is cancellation safe. Every other `async` method reads
/// or writes a frame in several steps: dropping its future part-way (in `select!`, under a
/// timeout) can leave half a frame read or written, after which the connection is out of
/// step and must be dropped.
#[derive(Debug)]
pub struct AsyncClient {
    r: BufReader<Reader>,
    w: Writer,
    /// The server's address as the caller named it, for errors.
    addr: String,
}

impl AsyncClient {
    /// A TCP connection to `addr` with Nagle's algorithm off, and no session yet: follow with
    /// [`handshake`](Self::handshake), or write anything with [`write_raw`](Self::write_raw).
    pub async fn open(addr: &str) -> Result<AsyncClient, RawError> {
        AsyncClient::open_with_buffer(addr, READ_BUFFER_BYTES).await
    }

    /// [`open`](Self::open) with a read buffer of `read_buffer_bytes`: a tool holding ten
    /// thousand sessions that each read a reply at a time wants a few KiB each, not the
    /// pipelining default.
    pub async fn open_with_buffer(
        addr: &str,
        read_buffer_bytes: usize,
    ) -> Result<AsyncClient, RawError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|source| RawError::Connect { addr: addr.to_owned(), source })?;
        stream.set_nodelay(true)?;
        let (r, w) = transport::tcp(stream);
        let r = BufReader::with_capacity(read_buffer_bytes, r);
        Ok(AsyncClient { r, w, addr: addr.to_owned() })
    }

    /// A TLS connection to `addr` (Nagle's algorithm off), verified and authenticated as `tls`
    /// says, and no session yet.
    pub async fn open_tls(addr: &str, tls: &TlsConfig) -> Result<AsyncClient, RawError> {
        let stream = tls.connect(addr).await?;
        Ok(AsyncClient::over(transport::tls(stream), addr))
    }

    fn over((r, w): (Reader, Writer), addr: &str) -> AsyncClient {
        let r = BufReader::with_capacity(READ_BUFFER_BYTES, r);
        AsyncClient { r, w, addr: addr.to_owned() }
    }

    /// A new session with `addr`, asking for `timeout`; the server's answer says what it
    /// granted.
    pub async fn connect(
        addr: &str,
        timeout: std::time::Duration,
    ) -> Result<(AsyncClient, ConnectResponse), RawError> {
        AsyncClient::connect_with(addr, &new_session(timeout)).await
    }

    /// A session with `addr` from any handshake, for instance [`resume`](super::resume).
    pub async fn connect_with(
        addr: &str,
        req: &ConnectRequest,
    ) -> Result<(AsyncClient, ConnectResponse), RawError> {
        let mut c = AsyncClient::open(addr).await?;
        let resp = c.handshake(req).await?;
        Ok((c, resp))
    }

    /// Sends the handshake `req` and reads the server's answer. A server that closes the
    /// connection instead gives [`RawError::Handshake`].
    pub async fn handshake(&mut self, req: &ConnectRequest) -> Result<ConnectResponse, RawError> {
        self.write_raw(&handshake_frame(req)).await?;
        let frame = match self.read_frame().await {
            Ok(frame) => frame,
            Err(e) => {
                return Err(RawError::Handshake { addr: self.addr.clone(), source: Box::new(e) })
            }
        };
        connect_response(&frame)
    }

    /// Writes `bytes` as they are: a frame, several, part of one, or anything else.
    pub async fn write_raw(&mut self, bytes: &[u8]) -> Result<(), RawError> {
        Ok(self.w.write_all(bytes).await?)
    }

    /// Sends `req` with `xid`, without waiting for its reply.
    pub async fn send(&mut self, req: &Request, xid: i32) -> Result<(), RawError> {
        self.write_raw(&req.to_frame(xid)).await
    }

    /// Sends every request with its xid in one write (pipelined); read their replies, in
    /// order, with [`read_reply`](Self::read_reply).
    pub async fn send_all<'a>(
        &mut self,
        reqs: impl IntoIterator<Item = (&'a Request, i32)>,
    ) -> Result<(), RawError> {
        let bytes: Vec<u8> = reqs.into_iter().flat_map(|(req, xid)| req.to_frame(xid)).collect();
        self.write_raw(&bytes).await
    }

    /// Sends a ping without waiting for its reply.
    pub async fn send_ping(&mut self) -> Result<(), RawError> {
        self.send(&Request::Ping, xid::PING).await
    }

    /// The next frame's body, length prefix removed, whatever it holds.
    pub async fn read_frame(&mut self) -> Result<Vec<u8>, RawError> {
        let mut prefix = [0; 4];
        self.r.read_exact(&mut prefix).await?;
        let mut body = vec![0; frame_len(prefix)?];
        self.r.read_exact(&mut body).await?;
        Ok(body)
    }

    /// The next frame: a reply, a notification or a ping's reply.
    pub async fn read_reply(&mut self) -> Result<Reply, RawError> {
        Reply::parse(self.read_frame().await?)
    }

    /// Sends `req` with `xid` and returns the first reply that answers a request, skipping
    /// notifications and pings' replies (its xid is not checked: see
    /// [`read_reply`](Self::read_reply) for that).
    pub async fn call(&mut self, req: &Request, xid: i32) -> Result<Reply, RawError> {
        self.send(req, xid).await?;
        loop {
            let reply = self.read_reply().await?;
            if answers_request(&reply) {
                return Ok(reply);
            }
        }
    }

    /// The next watch notification, skipping pings' replies; a reply to a request is an
    /// error ([`RawError::UnexpectedReply`]).
    pub async fn read_notification(&mut self) -> Result<WatcherEvent, RawError> {
        loop {
            if let Some(event) = as_notification(&self.read_reply().await?)? {
                return Ok(event);
            }
        }
    }

    /// Sends a ping and waits for its reply, skipping notifications; a reply to a request is
    /// an error ([`RawError::UnexpectedReply`]).
    pub async fn ping(&mut self) -> Result<(), RawError> {
        self.send_ping().await?;
        while !is_ping_reply(&self.read_reply().await?)? {}
        Ok(())
    }

    /// Ends the session (closeSession) and waits for the server's reply, then the connection.
    pub async fn close(mut self) -> Result<(), RawError> {
        self.call(&Request::CloseSession, 1).await?;
        let _ = self.w.shutdown().await;
        Ok(())
    }

    /// Whether a whole frame has already been read from the socket, so that
    /// [`read_frame`](Self::read_frame) returns without waiting. A pipelining caller writes
    /// its next requests only when this is false: one write for all the requests the
    /// buffered replies make room for. (A bad length counts as no frame; reading reports it.)
    pub fn has_buffered_frame(&self) -> bool {
        matches!(split_frame(self.r.buffer(), usize::MAX), Ok(Some(_)))
    }

    /// Waits until bytes can be read (or the connection has ended), without reading them.
    /// Writing a request only then lets it carry the acknowledgement of the bytes waiting, where
    /// reading them first would make the kernel send an acknowledgement of its own. (Over TLS
    /// the records must be decrypted to know, so they are read into the buffer.)
    /// Cancellation safe.
    pub async fn readable(&mut self) -> Result<(), RawError> {
        if self.r.buffer().is_empty() {
            match self.r.get_mut() {
                Reader::Tcp(r) => {
                    r.peek(&mut [0; 1]).await?;
                }
                Reader::Tls(_) => {
                    self.r.fill_buf().await?;
                }
            }
        }
        Ok(())
    }

    /// The same connection with blocking calls, for a thread of its own. Refused while bytes
    /// are buffered (they would be lost).
    pub fn into_blocking(self) -> Result<BlockingClient, RawError> {
        if !self.r.buffer().is_empty() {
            let e = std::io::Error::other("bytes read and not yet taken would be lost");
            return Err(e.into());
        }
        let (Reader::Tcp(r), Writer::Tcp(w)) = (self.r.into_inner(), self.w) else {
            let e = std::io::Error::other("a TLS connection has no blocking form");
            return Err(e.into());
        };
        let stream = r.reunite(w).map_err(std::io::Error::other)?;
        let stream = stream.into_std()?;
        stream.set_nonblocking(false)?;
        let mut c = BlockingClient::from_stream(stream)?;
        c.addr = self.addr;
        Ok(c)
    }
}
