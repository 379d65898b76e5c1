//! [`RequestClock`]: one connection's request latencies, from the read that brought a request
//! to the write that put its reply on the wire, split as ZooKeeper splits them: updates
//! (requests that become transactions) and reads (everything else, pings included).
//!
//! A connection answers its requests in the order it received them (ZooKeeper's per-session
//! FIFO, which the core keeps), and every request gets exactly one reply, which the flow
//! control already counts (`ConnCtl::replies_sent`). So arrivals wait in a FIFO and each reply
//! takes the oldest: no xid matching. The FIFO never holds more than the connection's requests
//! in flight (`max_outstanding_requests_per_connection`).
//!
//! The figures go to one of [`LATENCY_SHARDS`] pools, chosen by connection id, each on its own
//! cache line: no report needs one connection's figures, only their sum, and two histograms
//! of its own were 512 bytes of every connection, idle or not. A pool's lock is shared by a
//! sixteenth of the connections and held for a few additions, so recording stays off any
//! line every thread writes.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use rzk_proto::OpCode;

use crate::distribution::Snapshot;

/// The latency figures of requests, in microseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latencies {
    pub read_us: Snapshot,
    pub update_us: Snapshot,
}

impl Latencies {
    pub fn merge(&mut self, other: &Latencies) {
        self.read_us.merge(&other.read_us);
        self.update_us.merge(&other.update_us);
    }
}

#[derive(Clone, Copy)]
enum Kind {
    /// The connection's first frame: its reply is the session's, not a request's.
    Connect,
    Read,
    Update,
}

/// Pools the connections' figures are spread over.
pub(crate) const LATENCY_SHARDS: usize = 16;

/// One pool of connections' figures, on a cache line of its own.
#[derive(Default)]
#[repr(align(64))]
pub(crate) struct LatencyShard(Mutex<Latencies>);

impl LatencyShard {
    /// The figures so far.
    pub(crate) fn figures(&self) -> Latencies {
        lock(&self.0).clone()
    }
}

#[derive(Default)]
struct State {
    arrivals: VecDeque<(Instant, Kind)>,
    connected: bool,
}

/// See the module documentation.
pub(crate) struct RequestClock {
    state: Mutex<State>,
    pool: Arc<LatencyShard>,
}

impl RequestClock {
    /// A connection's clock, recording into `pool`.
    pub(crate) fn new(pool: Arc<LatencyShard>) -> RequestClock {
        RequestClock { state: Mutex::default(), pool }
    }

    /// `frames` (each a request's bytes after the length) were read at `at`.
    pub(crate) fn arrived<'a>(&self, at: Instant, frames: impl Iterator<Item = &'a [u8]>) {
        let mut st = self.lock();
        for frame in frames {
            let kind = if !st.connected {
                st.connected = true;
                Kind::Connect
            } else {
                kind_of(frame)
            };
            st.arrivals.push_back((at, kind));
        }
    }

    /// The last `n` arrivals were not handed to the core after all.
    pub(crate) fn withdrawn(&self, n: usize) {
        let mut st = self.lock();
        let keep = st.arrivals.len().saturating_sub(n);
        st.arrivals.truncate(keep);
    }

    /// `n` replies are on the wire, answering the `n` oldest arrivals.
    pub(crate) fn answered(&self, n: usize) {
        let now = Instant::now();
        let mut st = self.lock();
        if st.arrivals.is_empty() {
            return;
        }
        // Lock order: a connection's state, then its pool; nothing takes them the other way.
        let mut figures = lock(&self.pool.0);
        for _ in 0..n {
            let Some((at, kind)) = st.arrivals.pop_front() else { break };
            let us = u64::try_from(now.duration_since(at).as_micros()).unwrap_or(u64::MAX);
            match kind {
                Kind::Connect => {}
                Kind::Read => figures.read_us.record(us),
                Kind::Update => figures.update_us.record(us),
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// The state stays consistent at every step; a panic elsewhere does not spoil it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A request's kind from its header (xid, then the op code).
fn kind_of(frame: &[u8]) -> Kind {
    let op = frame.get(4..8).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    match op.and_then(OpCode::from_i32) {
        Some(op) if op.is_write() => Kind::Update,
        _ => Kind::Read,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(op: OpCode) -> Vec<u8> {
        let mut f = 7i32.to_be_bytes().to_vec();
        f.extend_from_slice(&op.as_i32().to_be_bytes());
        f
    }

    #[test]
    fn replies_answer_the_oldest_and_split_reads_from_updates() {
        let pool = Arc::new(LatencyShard::default());
        let clock = RequestClock::new(pool.clone());
        let t0 = Instant::now();
        let connect = [0u8; 44];
        let (get, set) = (request(OpCode::GetData), request(OpCode::SetData));
        clock.arrived(t0, [&connect[..], &get[..], &set[..], &get[..]].into_iter());
        clock.withdrawn(1);
        clock.answered(3);
        let f = pool.figures();
        assert_eq!((f.read_us.count, f.update_us.count), (1, 1));
        // Nothing left to answer: more replies than arrivals record nothing.
        clock.answered(5);
        assert_eq!(pool.figures(), f);
        clock.arrived(t0, [&set[..], &[0u8; 2][..]].into_iter());
        clock.answered(2);
        let f = pool.figures();
        assert_eq!((f.read_us.count, f.update_us.count), (2, 2));
    }
}
