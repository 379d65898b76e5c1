//! A TCP proxy the test controls, for fault injection (docs/election.md §4.2): `cut` closes
//! every connection and refuses new ones, `blackhole` keeps sockets open and forwards nothing,
//! `heal` restores.
//!
//! Started within a tokio runtime, the proxy runs on it, so that its forwarding is scheduled
//! with the clients it serves, as a test's timing bounds assume; started outside one (a
//! synchronous test), on a runtime of its own.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the proxy does with the bytes and connections it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Cut,
    Blackhole,
}

/// How many bytes one read forwards at the most.
const CHUNK_BYTES: usize = 64 * 1024;

/// A proxy on 127.0.0.1 in front of one upstream address; everything is closed on drop.
pub struct Proxy {
    addr: SocketAddr,
    mode: Arc<watch::Sender<Mode>>,
    task: JoinHandle<()>,
    /// The proxy's own runtime, when it was started outside one.
    runtime: Option<Runtime>,
}

impl Proxy {
    /// Starts forwarding connections to `upstream` (`host:port`), in `Mode::Pass`.
    pub fn start(upstream: impl ToString) -> Proxy {
        let upstream = upstream.to_string();
        let (runtime, handle) = match Handle::try_current() {
            Ok(handle) => (None, handle),
            Err(_) => {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("rzk-testkit-proxy")
                    .enable_all()
                    .build()
                    .expect("proxy runtime");
                let handle = runtime.handle().clone();
                (Some(runtime), handle)
            }
        };
        let listener =
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
        listener.set_nonblocking(true).expect("non-blocking listener");
        let addr = listener.local_addr().expect("proxy address");
        let (mode, _) = watch::channel(Mode::Pass);
        let mode = Arc::new(mode);
        let task = handle.spawn(accept(listener, upstream, mode.clone()));
        Proxy { addr, mode, task, runtime }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connect string of the proxy.
    pub fn hosts(&self) -> String {
        self.addr.to_string()
    }

    pub fn cut(&self) {
        self.mode.send_replace(Mode::Cut);
    }

    pub fn blackhole(&self) {
        self.mode.send_replace(Mode::Blackhole);
    }

    pub fn heal(&self) {
        self.mode.send_replace(Mode::Pass);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        // The forwarding tasks end when they see the cut.
        self.mode.send_replace(Mode::Cut);
        // Not a blocking shutdown: the proxy may be dropped on a test's own runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

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
                // Hold the socket, silent, until the mode changes; then drop it.
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

async fn forward(client: TcpStream, upstream: String, mode: watch::Receiver<Mode>) {
    let Ok(server) = TcpStream::connect(&upstream).await else { return };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let a = pump(cr, sw, mode.clone());
    let b = pump(sr, cw, mode);
    // When either side ends, drop both (closes the sockets).
    tokio::select! { _ = a => {}, _ = b => {} }
}

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
        tokio::select! {
            r = from.read(&mut buf) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    // Data read after the mode changed is dropped (blackhole) or ends all (cut).
                    let now = *mode.borrow();
                    match now {
                        Mode::Pass => {
                            if to.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                        Mode::Cut => return,
                        Mode::Blackhole => {}
                    }
                }
            },
            r = mode.changed() => if r.is_err() { return },
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
        let p = Proxy::start(upstream.local_addr().unwrap());
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
        let p = Proxy::start(upstream.local_addr().unwrap());
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
        let p = Proxy::start(upstream.local_addr().unwrap());
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
