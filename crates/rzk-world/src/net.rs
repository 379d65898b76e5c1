//! The world's network: an rzk-client [`Transport`] whose connections are in-memory pipes to
//! the world's server, each with a pump task on the server's side that the faults can cut,
//! black-hole or slow down. One `SimNet` per client process: a crashed process's network
//! refuses everything, as a dead machine's would.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rzk_client::{OpenFuture, Stream, Transport};
use rzk_core::ConnId;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use crate::server::{Accepted, Server};

/// Bytes in flight each way in one connection's pipe; a writer beyond it waits, as on a
/// socket whose buffers are full.
const PIPE_BYTES: usize = 256 * 1024;
/// Bytes the pump reads at a time.
const READ_CHUNK_BYTES: usize = 16 * 1024;
/// The largest frame the server takes, as its `jute.maxbuffer`.
const MAX_FRAME_BYTES: usize = rzk_proto::DEFAULT_MAX_PACKET_BYTES;

/// Connection attempts one process's network allows in any [`STORM_WINDOW`]; more is a
/// reconnect storm. rzk-client's pacing (a random pause before a reconnect, then a doubling
/// back-off from 50 ms) and the session's own back-off between sessions make about six in
/// the densest second; twenty-five leaves room and still stops a loop that never pauses.
pub(crate) const STORM_ATTEMPTS_MAX: usize = 25;
/// The window [`STORM_ATTEMPTS_MAX`] counts over.
const STORM_WINDOW: Duration = Duration::from_secs(1);

/// One process's network.
pub(crate) struct SimNet {
    server: Arc<Server>,
    process: usize,
    alive: Arc<AtomicBool>,
    /// When each of the last attempts was made, oldest first, at most [`STORM_ATTEMPTS_MAX`].
    attempts: Mutex<VecDeque<tokio::time::Instant>>,
}

impl SimNet {
    /// The network of `process`, alive until [`SimNet::kill`].
    pub fn new(server: Arc<Server>, process: usize) -> Arc<SimNet> {
        let attempts = Mutex::new(VecDeque::with_capacity(STORM_ATTEMPTS_MAX + 1));
        Arc::new(SimNet { server, process, alive: Arc::new(AtomicBool::new(true)), attempts })
    }

    /// The world's server.
    pub fn server(&self) -> &Arc<Server> {
        &self.server
    }

    /// Counts an attempt; false when it makes a storm, which the server records as the
    /// world's failure.
    fn paced(&self) -> bool {
        let now = tokio::time::Instant::now();
        let mut a = self.attempts.lock().expect("a world task panicked holding the attempts");
        a.push_back(now);
        while a.front().is_some_and(|&t| now.duration_since(t) >= STORM_WINDOW) {
            a.pop_front();
        }
        if a.len() <= STORM_ATTEMPTS_MAX {
            return true;
        }
        a.pop_front();
        self.server.report(format!(
            "reconnect storm: p{} made more than {STORM_ATTEMPTS_MAX} connection attempts in \
             {STORM_WINDOW:?}",
            self.process
        ));
        false
    }

    /// The process died: its connections are cut and it opens no more.
    pub fn kill(&self) {
        self.alive.store(false, Ordering::SeqCst);
        self.server.set_links(Some(self.process), |l| l.cut = true);
    }
}

impl Transport for SimNet {
    fn open<'a>(&'a self, _addr: &'a str) -> OpenFuture<'a> {
        Box::pin(async move {
            if !self.paced() {
                // A storm spins without letting the world's clock move; held, the attempt
                // times out on the client's clock instead, and the world runs to its end.
                std::future::pending::<()>().await;
            }
            if !self.alive.load(Ordering::SeqCst) {
                return Err(io::Error::new(io::ErrorKind::ConnectionRefused, "process dead"));
            }
            let accepted = self.server.open(self.process)?;
            let (client, server_end) = tokio::io::duplex(PIPE_BYTES);
            tokio::spawn(pump(self.server.clone(), accepted, server_end));
            Ok(Box::new(client) as Box<dyn Stream>)
        })
    }
}

/// Moves frames between a connection's pipe and the server until either side ends it or a
/// fault cuts it. A cut (a crash, a dead process) loses what is queued; a close by the
/// server writes what it queued first, as the real server's pump does; a black-hole holds
/// everything, a frame caught in a delay included, until it clears.
async fn pump(server: Arc<Server>, accepted: Accepted, mut io: DuplexStream) {
    let Accepted { conn, mut out, mut link } = accepted;
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    // A frame taken from the queue when a black-hole began during its delay.
    let mut held: Option<Vec<u8>> = None;
    loop {
        let now = *link.borrow_and_update();
        if now.cut {
            break;
        }
        if now.hole {
            if link.changed().await.is_err() {
                break;
            }
            continue;
        }
        if let Some(frame) = held.take() {
            if io.write_all(&frame).await.is_err() {
                break;
            }
            continue;
        }
        tokio::select! {
            biased;
            r = link.changed() => if r.is_err() {
                // The server closed the connection: its last frames go out first.
                while let Some(frame) = out.recv().await {
                    if io.write_all(&frame).await.is_err() {
                        break;
                    }
                }
                break;
            },
            frame = out.recv() => {
                let Some(frame) = frame else { break };
                if now.delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(now.delay_ms)).await;
                }
                let after = *link.borrow();
                if after.cut {
                    break;
                }
                if after.hole {
                    held = Some(frame);
                    continue;
                }
                if io.write_all(&frame).await.is_err() {
                    break;
                }
            }
            r = io.read(&mut chunk) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if !deliver(&server, conn, &mut buf) {
                        break;
                    }
                }
            },
        }
    }
    server.closed(conn);
}

/// Hands every whole frame in `buf` to the server; false when the stream is garbage.
fn deliver(server: &Server, conn: ConnId, buf: &mut Vec<u8>) -> bool {
    loop {
        match rzk_proto::split_frame(buf, MAX_FRAME_BYTES) {
            Ok(Some(len)) => {
                server.receive(conn, &buf[4..4 + len]);
                buf.drain(..4 + len);
            }
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}
