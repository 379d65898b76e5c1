//! A connection's byte stream, plain TCP or TLS, behind the operations the connection code
//! uses: the reader's `read_buf`, and the writers' non-blocking `try_write`, `writable` and
//! the finishing of sealed bytes. Everything above this file is the same for both ports.
//!
//! After the handshake, TLS does not go through tokio-rustls's `AsyncWrite`: the flusher
//! writes from whichever thread routed the frames, without a task or a waker (see
//! `output_queue`). So records are sealed and handed to the socket with `try_write` under the
//! session's lock, which keeps the order on the wire the order in which plaintext was
//! accepted, whoever writes. What the socket does not take stays sealed in the session (at
//! most [`TLS_SEALED_BYTES_MAX`] before it refuses more plaintext) until the writer task
//! finishes it.

use std::io::{self, Read, Write};
use std::sync::Arc;

use rzk_proto::split_frame;
use socket2::SockRef;
use tokio::io::{AsyncReadExt, Interest};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::rustls::ServerConnection;

/// Bytes sealed and not yet taken by the socket that one TLS connection may hold; plaintext
/// past it waits, as for a full socket buffer, with the writer task.
pub(crate) const TLS_SEALED_BYTES_MAX: usize = 256 * 1024;
/// Ciphertext read from a TLS socket per call.
const TLS_READ_CHUNK_BYTES: usize = 32 * 1024;
/// Plaintext room offered to the session per read, at least.
const PLAIN_READ_MIN_BYTES: usize = 4 * 1024;

/// A TLS connection after its handshake, shared by its reader and its writers.
pub(crate) struct Tls {
    tcp: TcpStream,
    session: parking_lot::Mutex<ServerConnection>,
}

/// The reading side of a connection.
pub(crate) enum ReadSide {
    Plain(OwnedReadHalf),
    Tls {
        tls: Arc<Tls>,
        /// Ciphertext read from the socket, consumed from `at`.
        cipher: Vec<u8>,
        at: usize,
    },
}

/// The writing side of a connection, shared by its flusher and its writer task.
pub(crate) enum WriteSide {
    Plain(OwnedWriteHalf),
    Tls(Arc<Tls>),
}

/// The two sides of a plain TCP connection.
pub(crate) fn plain(stream: TcpStream) -> (ReadSide, WriteSide) {
    let (rd, wr) = stream.into_split();
    (ReadSide::Plain(rd), WriteSide::Plain(wr))
}

/// The two sides of a TLS connection whose handshake is done. Plaintext the client sent with
/// its last handshake flight stays in the session and is read first.
pub(crate) fn tls(tcp: TcpStream, mut session: ServerConnection) -> (ReadSide, WriteSide) {
    session.set_buffer_limit(Some(TLS_SEALED_BYTES_MAX));
    let tls = Arc::new(Tls { tcp, session: parking_lot::Mutex::new(session) });
    (ReadSide::Tls { tls: tls.clone(), cipher: Vec::new(), at: 0 }, WriteSide::Tls(tls))
}

impl ReadSide {
    /// Waits until a read would find something: the socket's readiness for plain TCP; at once
    /// for TLS, whose session may hold plaintext already and keeps its own buffers.
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self {
            ReadSide::Plain(rd) => rd.readable().await,
            ReadSide::Tls { .. } => Ok(()),
        }
    }

    /// Reads what the socket holds into `buf` without waiting: `WouldBlock` when it holds
    /// nothing. A read that found less than `buf` holds emptied the socket's queue, so its
    /// readiness is cleared with it, and `readable` waits for the next bytes instead of a
    /// second `recv` learning `EAGAIN`: a session with one request in flight would otherwise
    /// pay two reads a request. Tokio clears readiness only if no event came after the one
    /// this read answered, so bytes that arrive after the read still wake the reader. `None`
    /// for TLS, whose reads go through `read_buf`.
    pub(crate) fn try_read(&self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        match self {
            ReadSide::Plain(rd) => Some(read_draining(rd.as_ref(), buf)),
            ReadSide::Tls { .. } => None,
        }
    }

    /// Appends what the client sent to `buf`; 0 at the end of the stream.
    ///
    /// # Errors
    /// The socket's read errors; for TLS also a record that does not decrypt or a protocol
    /// violation (`InvalidData`, after the alert is sent).
    ///
    /// # Cancellation safety
    /// Safe: it awaits only the socket's readiness, and nothing read is held across it.
    pub(crate) async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            ReadSide::Plain(rd) => rd.read_buf(buf).await,
            ReadSide::Tls { tls, cipher, at } => loop {
                if let Some(n) = tls.take_plaintext(buf, cipher, at)? {
                    return Ok(n);
                }
                tls.tcp.readable().await?;
                cipher.resize(TLS_READ_CHUNK_BYTES, 0);
                *at = 0;
                match tls.tcp.try_read(cipher) {
                    Ok(0) => {
                        cipher.clear();
                        return Ok(0);
                    }
                    Ok(n) => cipher.truncate(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => cipher.clear(),
                    Err(e) => {
                        cipher.clear();
                        return Err(e);
                    }
                }
            },
        }
    }
}

impl WriteSide {
    /// Writes what the socket takes now, without waiting.
    ///
    /// # Errors
    /// `WouldBlock` if nothing was taken; the socket's other errors.
    pub(crate) fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            WriteSide::Plain(wr) => wr.try_write(bytes),
            WriteSide::Tls(tls) => tls.try_write(bytes),
        }
    }

    /// Waits until the socket may take more.
    ///
    /// # Errors
    /// The socket's errors.
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub(crate) async fn writable(&self) -> io::Result<()> {
        match self {
            WriteSide::Plain(wr) => wr.writable().await,
            WriteSide::Tls(tls) => tls.tcp.writable().await,
        }
    }

    /// Whether bytes accepted by `try_write` are still sealed, waiting for the socket (never
    /// for plain TCP).
    pub(crate) fn has_sealed(&self) -> bool {
        match self {
            WriteSide::Plain(_) => false,
            WriteSide::Tls(tls) => tls.session.lock().wants_write(),
        }
    }

    /// Hands the socket what it takes now of the sealed bytes.
    ///
    /// # Errors
    /// The socket's errors other than `WouldBlock`.
    pub(crate) fn try_send_sealed(&self) -> io::Result<()> {
        match self {
            WriteSide::Plain(_) => Ok(()),
            WriteSide::Tls(tls) => send_sealed(&mut tls.session.lock(), &tls.tcp),
        }
    }
}

impl WriteSide {
    /// Tells a TLS client that the stream ends here (`close_notify`), best effort: the
    /// connection is closing whether or not the socket takes it.
    pub(crate) fn try_close_notify(&self) {
        if let WriteSide::Tls(tls) = self {
            let mut session = tls.session.lock();
            session.send_close_notify();
            let _ = send_sealed(&mut session, &tls.tcp);
        }
    }
}

impl Tls {
    /// Seals `bytes` once what was sealed before is in the socket, and sends what it takes.
    ///
    /// Each ZooKeeper frame is sealed on its own, so that a frame ends with a TLS record, as
    /// ZooKeeper's Netty server writes them. Clients such as kazoo wait with `select` on the
    /// socket between frames: a next frame sealed in the same record as the previous one would
    /// sit decrypted in their TLS library, unseen, until other bytes arrived.
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        let mut session = self.session.lock();
        send_sealed(&mut session, &self.tcp)?;
        if session.wants_write() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let mut taken = 0;
        while taken < bytes.len() {
            let rest = &bytes[taken..];
            // Anything that is not a whole frame (a frame's unsent tail, a four-letter word's
            // answer) goes as it is.
            let end = match split_frame(rest, usize::MAX) {
                Ok(Some(len)) => 4 + len,
                _ => rest.len(),
            };
            let n = session.writer().write(&rest[..end])?;
            taken += n;
            if n < end {
                break;
            }
        }
        send_sealed(&mut session, &self.tcp)?;
        if taken == 0 && !bytes.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(taken)
    }

    /// Moves plaintext to `buf`, decrypting ciphertext from `cipher[at..]` as needed. `None`
    /// once the ciphertext is used up without plaintext; `Some(0)` at the client's
    /// `close_notify`.
    fn take_plaintext(
        &self,
        buf: &mut Vec<u8>,
        cipher: &[u8],
        at: &mut usize,
    ) -> io::Result<Option<usize>> {
        let mut session = self.session.lock();
        loop {
            let start = buf.len();
            buf.reserve(PLAIN_READ_MIN_BYTES);
            let room = (buf.capacity() - start).min(TLS_READ_CHUNK_BYTES);
            buf.resize(start + room, 0);
            let read = session.reader().read(&mut buf[start..]);
            match read {
                Ok(n) => {
                    buf.truncate(start + n);
                    return Ok(Some(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => buf.truncate(start),
                Err(e) => {
                    buf.truncate(start);
                    return Err(e);
                }
            }
            if *at == cipher.len() {
                return Ok(None);
            }
            let mut rest = &cipher[*at..];
            let n = session.read_tls(&mut rest)?;
            if n == 0 {
                // Plaintext was drained above, so the session has room: not reached.
                return Err(io::Error::new(io::ErrorKind::InvalidData, "TLS buffer full"));
            }
            *at += n;
            if let Err(e) = session.process_new_packets() {
                // The alert describing the failure, best effort.
                let _ = send_sealed(&mut session, &self.tcp);
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            // Post-handshake messages the session answers (a key update, say).
            send_sealed(&mut session, &self.tcp)?;
        }
    }
}

/// Sends sealed records until the socket takes no more.
fn send_sealed(session: &mut ServerConnection, tcp: &TcpStream) -> io::Result<()> {
    while session.wants_write() {
        match session.write_tls(&mut TryWriter(tcp)) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `io::Write` over a tokio socket's non-blocking `try_write`.
struct TryWriter<'a>(&'a TcpStream);

impl Write for TryWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.try_write(bytes)
    }

    /// rustls hands its sealed records over as one slice each: without this, the default
    /// would send only the first, and a batch of replies would cost a system call per frame
    /// (each frame is its own record) where the plain port spends one per batch.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One `recv` into `buf` under `stream`'s readiness, whose readiness it clears when the read
/// came back short (see `ReadSide::try_read`). The end of the stream (0) is returned as read.
fn read_draining(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    let mut short = None;
    let read = stream.try_io(Interest::READABLE, || {
        let n = (&*SockRef::from(stream)).read(buf)?;
        if n == 0 || n == buf.len() {
            return Ok(n);
        }
        short = Some(n);
        Err(io::ErrorKind::WouldBlock.into())
    });
    match (read, short) {
        (_, Some(n)) => Ok(n),
        (read, None) => read,
    }
}
