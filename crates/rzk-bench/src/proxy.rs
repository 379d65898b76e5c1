//! A TCP proxy that a session talks through, so that its host can be cut off the network
//! like a crashed one (the demo's crash scenario, the failover workload).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

/// How often a proxied connection checks whether it has been cut.
const CUT_POLL_INTERVAL: Duration = Duration::from_millis(5);

/// A proxy on a free local port to one server.
pub struct Proxy {
    /// Where clients connect instead of the server.
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
}

impl Proxy {
    /// Listens on a free port of 127.0.0.1 and forwards every connection to `target`.
    pub async fn start(target: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let cut = Arc::new(AtomicBool::new(false));
        let flag = cut.clone();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if flag.load(Ordering::SeqCst) {
                    continue; // dropped: the host is gone
                }
                tokio::spawn(forward(inbound, target, flag.clone()));
            }
        });
        Ok(Proxy { addr, cut })
    }

    /// Cuts every connection, present and future: the server sees the client's connection
    /// end and hears nothing more from it, as when its host has crashed; its session lives on
    /// until its timeout. The client sees its connection end and cannot connect again.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }
}

/// Copies bytes both ways between `inbound` and `target` until either side closes or `cut`.
async fn forward(mut inbound: TcpStream, target: SocketAddr, cut: Arc<AtomicBool>) {
    let Ok(mut outbound) = TcpStream::connect(target).await else { return };
    let copy = tokio::io::copy_bidirectional(&mut inbound, &mut outbound);
    tokio::pin!(copy);
    loop {
        tokio::select! {
            _ = &mut copy => return,
            _ = tokio::time::sleep(CUT_POLL_INTERVAL) => {
                if cut.load(Ordering::SeqCst) { return; }
            }
        }
    }
}
