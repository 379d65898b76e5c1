//! A TCP proxy on 127.0.0.1 in front of one upstream server, for fault injection: a client
//! connects to the proxy instead of the server, and the proxy's owner decides what the network
//! does to it. The demo's crash scenario and the failover workload cut a leader off with it;
//! the test suites use it (through rzk-testkit) for every network fault.
//!
//! # Faults
//! Each takes effect at once, on every connection, present and future:
//! - [`Proxy::cut`]: the host is gone. Every connection is closed, and every new one is closed
//!   as soon as it is accepted. The server sees the client's connection end and hears nothing
//!   more from it, as when its host has crashed; its session lives on until its timeout.
//! - [`Proxy::blackhole`]: a partition. Sockets stay open and nothing passes either way: bytes
//!   read meanwhile are dropped, and new connections are held open, silent, until the next
//!   change of fault (then closed).
//! - [`Proxy::heal`]: forwarding again. Connections a blackhole held resume (what it dropped
//!   stays lost); connections a cut closed stay closed, and the client connects again.
//!
//! Dropping the proxy cuts everything and stops listening.
//!
//! # Runtime
//! Started within a tokio runtime, the proxy runs on it, so that its forwarding is scheduled
//! with the clients it serves, as a test's timing bounds assume; started outside one (a
//! synchronous test), on a runtime of its own with one worker thread, shut down on drop
//! without blocking (the proxy may be dropped on another runtime).
//!
//! # Cancellation
//! Nothing here is async for the caller: [`Proxy::start`] binds synchronously and the faults
//! are synchronous. The async fns below run only as the proxy's own spawned tasks. Within
//! them, a read is cancellation safe (nothing read is lost when the fault changes first); a
//! write is not, so it is cancelled only by a cut, which ends its connection anyway.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How many bytes one read forwards at the most (one buffer per direction and connection).
const CHUNK_BYTES: usize = 64 * 1024;

/// How long a new connection waits for the upstream to accept before the proxy closes it.
const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the proxy does with the bytes and connections it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Pass,
    Cut,
    Blackhole,
}

/// A proxy on a free port of 127.0.0.1 in front of one upstream address; everything is closed
/// on drop.
pub struct Proxy {
    addr: SocketAddr,
    mode: Arc<watch::Sender<Mode>>,
    task: JoinHandle<()>,
    /// The proxy's own runtime, when it was started outside one.
    runtime: Option<Runtime>,
}

impl Proxy {
    /// Listens on a free port of 127.0.0.1 and forwards every connection to `upstream`
    /// (`host:port`, or anything that displays as one, such as a `SocketAddr`; resolved on
    /// each connection).
    pub fn start(upstream: impl ToString) -> io::Result<Proxy> {
        let upstream = upstream.to_string();
        let (runtime, handle) = match Handle::try_current() {
            Ok(handle) => (None, handle),
            Err(_) => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("rzk-proxy")
                    .enable_all()
                    .build()?;
                let handle = runtime.handle().clone();
                (Some(runtime), handle)
            }
        };
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (mode, _) = watch::channel(Mode::Pass);
        let mode = Arc::new(mode);
        let task = handle.spawn(accept(listener, upstream, mode.clone()));
        Ok(Proxy { addr, mode, task, runtime })
    }

    /// Where clients connect instead of the upstream.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connect string of the proxy.
    pub fn hosts(&self) -> String {
        self.addr.to_string()
    }

    /// Closes every connection and every new one, as when the client's host has crashed.
    pub fn cut(&self) {
        self.mode.send_replace(Mode::Cut);
    }

    /// Keeps every socket open and forwards nothing, as in a network partition.
    pub fn blackhole(&self) {
        self.mode.send_replace(Mode::Blackhole);
    }

    /// Forwards again.
    pub fn heal(&self) {
        self.mode.send_replace(Mode::Pass);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        // The forwarding tasks end when they see the cut.
        self.mode.send_replace(Mode::Cut);
        // Not a blocking shutdown: the proxy may be dropped on a caller's runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Accepts connections until the proxy is dropped (or the listener fails), and treats each by
/// the mode it finds.
async fn accept(listener: std::net::TcpListener, upstream: String, mode: Arc<watch::Sender<Mode>>) {
    let Ok(listener) = TcpListener::from_std(listener) else { return };
    loop {
        let Ok((client, _)) = listener.accept().await else { return };
        let current = *mode.borrow();
        match current {
            Mode::Pass => {}
            Mode::Cut => {
                drop(client);
                continue;
            }
            Mode::Blackhole => {
                // Hold the socket, silent, until the mode changes or the proxy is dropped.
                let mut rx = mode.subscribe();
                tokio::spawn(async move {
                    let _ = rx.changed().await;
                    drop(client);
                });
                continue;
            }
        }
        tokio::spawn(forward(client, upstream.clone(), mode.subscribe()));
    }
}

/// Connects `client` to `upstream` and forwards both ways until either side ends or a cut.
async fn forward(client: TcpStream, upstream: String, mode: watch::Receiver<Mode>) {
    let connect = tokio::time::timeout(UPSTREAM_CONNECT_TIMEOUT, TcpStream::connect(&upstream));
    let Ok(Ok(server)) = connect.await else { return };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let a = pump(cr, sw, mode.clone());
    let b = pump(sr, cw, mode);
    // When either side ends, drop both (closes the sockets).
    tokio::select! { _ = a => {}, _ = b => {} }
}

/// Forwards one direction by the mode: passes, waits out a blackhole (dropping what it reads
/// meanwhile), returns on a cut, an end of stream or an error.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut mode: watch::Receiver<Mode>) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let current = *mode.borrow_and_update();
        match current {
            Mode::Cut => return,
            Mode::Blackhole => {
                if mode.changed().await.is_err() {
                    return;
                }
                continue;
            }
            Mode::Pass => {}
        }
        let n = tokio::select! {
            r = from.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            r = mode.changed() => {
                if r.is_err() {
                    return;
                }
                continue;
            }
        };
        // Data read after the mode changed is dropped (blackhole) or ends all (cut).
        let now = *mode.borrow();
        match now {
            Mode::Pass => {}
            Mode::Cut => return,
            Mode::Blackhole => continue,
        }
        // A peer that does not read must not hold off a cut.
        tokio::select! {
            r = to.write_all(&buf[..n]) => if r.is_err() { return },
            _ = mode.wait_for(|m| *m == Mode::Cut) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    use super::Proxy;

    /// An upstream that echoes one connection's bytes back.
    fn echo() -> TcpListener {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = l.try_clone().unwrap();
        std::thread::spawn(move || {
            for s in server.incoming() {
                let Ok(mut s) = s else { return };
                std::thread::spawn(move || {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        l
    }

    fn connect(p: &Proxy) -> TcpStream {
        let s = TcpStream::connect(p.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }

    #[test]
    fn passes_then_cuts_then_heals() {
        let upstream = echo();
        let p = Proxy::start(upstream.local_addr().unwrap()).unwrap();
        let mut s = connect(&p);
        s.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"ping");

        p.cut();
        let mut rest = Vec::new();
        assert!(s.read_to_end(&mut rest).is_ok_and(|_| rest.is_empty()), "closed by the cut");
        let mut refused = connect(&p);
        assert_eq!(refused.read(&mut buf).unwrap_or(0), 0, "new connections are closed");

        p.heal();
        let mut s = connect(&p);
        s.write_all(b"pong").unwrap();
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"pong");
    }

    #[test]
    fn a_blackhole_forwards_nothing_and_keeps_the_socket() {
        let upstream = echo();
        let p = Proxy::start(upstream.local_addr().unwrap()).unwrap();
        let mut s = connect(&p);
        s.write_all(b"a").unwrap();
        let mut buf = [0u8; 1];
        s.read_exact(&mut buf).unwrap();
        p.blackhole();
        s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        s.write_all(b"b").unwrap();
        let e = s.read(&mut buf).expect_err("nothing comes back through a blackhole");
        assert!(matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_on_the_callers_runtime_and_drops_there() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let upstream = echo();
        let p = Proxy::start(upstream.local_addr().unwrap()).unwrap();
        assert!(p.runtime.is_none(), "the caller's runtime serves the proxy");
        let mut s = tokio::net::TcpStream::connect(p.addr()).await.unwrap();
        s.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        drop(p);
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await.unwrap();
        assert_eq!(n.unwrap_or(0), 0, "dropping the proxy closes its connections");
    }
}
