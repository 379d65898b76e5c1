//! A TCP proxy the test controls (docs/election.md §4.2): `cut` closes every connection and
//! refuses new ones, `blackhole` keeps sockets open and forwards nothing, `heal` restores.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Cut,
    Blackhole,
}

/// A proxy in front of one upstream address.
pub struct Proxy {
    addr: SocketAddr,
    mode: Arc<watch::Sender<Mode>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("addr");
        let (mode, _) = watch::channel(Mode::Pass);
        let mode = Arc::new(mode);
        let m = mode.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else { return };
                match *m.borrow() {
                    Mode::Pass => {}
                    Mode::Cut => {
                        drop(client);
                        continue;
                    }
                    Mode::Blackhole => {
                        // Hold the socket, silent, until the mode changes; then drop it.
                        let mut rx = m.subscribe();
                        tokio::spawn(async move {
                            let _ = rx.changed().await;
                            drop(client);
                        });
                        continue;
                    }
                }
                let rx = m.subscribe();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else { return };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    let a = pump(cr, sw, rx.clone());
                    let b = pump(sr, cw, rx);
                    // When either side ends, drop both (closes the sockets).
                    tokio::select! { _ = a => {}, _ = b => {} }
                });
            }
        });
        Proxy { addr, mode, task }
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
        self.mode.send_replace(Mode::Cut);
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut mode: watch::Receiver<Mode>,
) {
    let mut buf = vec![0u8; 64 * 1024];
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
