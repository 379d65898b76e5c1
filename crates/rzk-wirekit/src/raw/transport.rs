//! The two byte streams a raw connection runs over: plain TCP, whose halves can be put back
//! together into a blocking socket, and TLS, whose halves share one session.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The reading half of a connection.
#[derive(Debug)]
pub(super) enum Reader {
    Tcp(OwnedReadHalf),
    Tls(ReadHalf<TlsStream<TcpStream>>),
}

/// The writing half of a connection.
#[derive(Debug)]
pub(super) enum Writer {
    Tcp(OwnedWriteHalf),
    Tls(WriteHalf<TlsStream<TcpStream>>),
}

/// Splits a TCP stream into its halves.
pub(super) fn tcp(stream: TcpStream) -> (Reader, Writer) {
    let (r, w) = stream.into_split();
    (Reader::Tcp(r), Writer::Tcp(w))
}

/// Splits a TLS session into its halves.
pub(super) fn tls(stream: TlsStream<TcpStream>) -> (Reader, Writer) {
    let (r, w) = tokio::io::split(stream);
    (Reader::Tls(r), Writer::Tls(w))
}

impl AsyncRead for Reader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Reader::Tcp(r) => Pin::new(r).poll_read(cx, buf),
            Reader::Tls(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Writer {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Writer::Tcp(w) => Pin::new(w).poll_write(cx, buf),
            Writer::Tls(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Tcp(w) => Pin::new(w).poll_flush(cx),
            Writer::Tls(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Tcp(w) => Pin::new(w).poll_shutdown(cx),
            Writer::Tls(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}
