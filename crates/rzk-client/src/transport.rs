//! How the client reaches a server: plain TCP by default, or any byte stream a
//! [`Transport`] opens (TLS, a proxy in tests).

use std::future::Future;
use std::io;
use std::pin::Pin;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A connected byte stream to a server.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {}

/// What [`Transport::open`] returns.
pub type OpenFuture<'a> = Pin<Box<dyn Future<Output = io::Result<Box<dyn Stream>>> + Send + 'a>>;

/// Opens connections to servers, for a client that must reach them other than by plain TCP
/// (`Connector::with_transport`).
pub trait Transport: Send + Sync + 'static {
    /// A connection to `addr` (`host:port`), ready for ZooKeeper's handshake.
    ///
    /// # Errors
    /// Whatever kept the connection from being made.
    ///
    /// # Cancellation safety
    /// The client drops the future at its connection timeout; it must leave nothing behind.
    fn open<'a>(&'a self, addr: &'a str) -> OpenFuture<'a>;
}

/// Plain TCP with Nagle's algorithm off: every request is one small frame the server should
/// see at once. A name is resolved on every attempt and its addresses are tried in a fresh
/// random order each time (the Java client picks one at random): a name for several servers
/// spreads its clients, and an address whose server refuses the session (behind the
/// client's zxid, read-only) is not the first one tried every time.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tcp;

impl Transport for Tcp {
    fn open<'a>(&'a self, addr: &'a str) -> OpenFuture<'a> {
        Box::pin(async move {
            let mut addrs: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host(addr).await?.collect();
            fastrand::shuffle(&mut addrs);
            let mut last =
                io::Error::new(io::ErrorKind::NotFound, format!("{addr} has no address"));
            for a in addrs {
                match TcpStream::connect(a).await {
                    Ok(s) => {
                        s.set_nodelay(true)?;
                        return Ok(Box::new(s) as Box<dyn Stream>);
                    }
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
    }
}
