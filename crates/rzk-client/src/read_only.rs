//! Read-only sessions ([`Connector::with_read_only`](crate::Connector::with_read_only)): while
//! connected to a read-only server, the session task looks for a read-write one the way the
//! Java client's `pingRwServer` does, and moves there when one answers.
//!
//! A ZooKeeper member cut off from its quorum, started with `readonlymode.enabled=true`,
//! serves reads to clients that asked for a read-only session. Such a session is the server's
//! own (local) one: no other member knows it, so a read-write member cannot resume it. The
//! Java client therefore asks for a new session on every connection until it has once been
//! connected to a read-write server, and so does this client: moving from a read-only server
//! to a read-write one changes the session id. A session that has been read-write is never
//! offered to a read-only server, which would refuse it.
//!
//! The search: every [`RwSearch::next_wait`] (from [`RW_PROBE_MIN`], doubling to
//! [`RW_PROBE_MAX`]) the next host of the list is asked `isro`, over the session's transport;
//! the first that answers `rw` is where the next connection goes. The schedule is plain
//! arithmetic, and [`probe`] is the only I/O.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::transport::Transport;

/// The first pause between two probes for a read-write server (the Java client's
/// `minPingRwTimeout`).
pub(crate) const RW_PROBE_MIN: Duration = Duration::from_millis(100);
/// The longest pause between two probes (`maxPingRwTimeout`).
pub(crate) const RW_PROBE_MAX: Duration = Duration::from_secs(60);
/// How long one probe may take, connect and answer included (the Java client's socket
/// timeout for it).
pub(crate) const RW_PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// The most bytes of a probe's answer read (`rw` or `ro`, and a newline at most).
const RW_PROBE_ANSWER_BYTES: usize = 16;

/// When to probe next, while the session is on a read-only server.
#[derive(Debug)]
pub(crate) struct RwSearch {
    next: Duration,
}

impl Default for RwSearch {
    fn default() -> Self {
        RwSearch { next: RW_PROBE_MIN }
    }
}

impl RwSearch {
    /// The pause before the next probe; each is twice the last, up to [`RW_PROBE_MAX`].
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (wait * 2).min(RW_PROBE_MAX);
        wait
    }
}

/// Whether `host` answers `isro` with `rw`. Any failure (refused, closed, silent for
/// [`RW_PROBE_TIMEOUT`], a four-letter word the server does not allow) is a no.
pub(crate) async fn probe(transport: &dyn Transport, host: &str) -> bool {
    let ask = async {
        let mut io = transport.open(host).await?;
        io.write_all(b"isro").await?;
        io.flush().await?;
        let mut answer = Vec::with_capacity(RW_PROBE_ANSWER_BYTES);
        let mut buf = [0; RW_PROBE_ANSWER_BYTES];
        while answer.len() < RW_PROBE_ANSWER_BYTES {
            match io.read(&mut buf[..RW_PROBE_ANSWER_BYTES - answer.len()]).await? {
                0 => break,
                n => answer.extend_from_slice(&buf[..n]),
            }
        }
        Ok::<_, std::io::Error>(answer)
    };
    match tokio::time::timeout(RW_PROBE_TIMEOUT, ask).await {
        Ok(Ok(answer)) => answer.trim_ascii() == b"rw",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pauses double from the Java client's minimum to its maximum and stay there.
    #[test]
    fn the_search_backs_off_to_a_minute() {
        let mut s = RwSearch::default();
        let waits: Vec<u128> = (0..12).map(|_| s.next_wait().as_millis()).collect();
        assert_eq!(
            waits,
            [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 60000, 60000]
        );
    }
}
