//! [`Inner::pump`]: carries out what the core has emitted, transactions to the log and frames
//! to their connections' queues, under the core's lock.

use std::sync::atomic::Ordering;

use rzk_core::{Output, Txn};

use crate::output_queue::{is_reply, Flush, Outgoing};
use crate::shared::{Inner, Shared};

impl Inner {
    /// Carries out everything the core has emitted: transactions to the log thread, frames
    /// to their connections' queues. Called with the lock held after every core call; the
    /// caller runs the returned [`Flush`] once it has released the lock.
    pub(crate) fn pump(&self, sh: &mut Shared) -> Flush {
        if sh.core.has_txns() {
            match &sh.log_tx {
                // Outputs stay queued in the core until the log thread reports them durable.
                Some(tx) => {
                    let txns: Vec<Txn> = sh.core.drain_txns().collect();
                    let _ = tx.send(txns);
                }
                // In memory a transaction is durable once applied.
                None => {
                    let last = sh.core.state().last_zxid();
                    sh.core.drain_txns().for_each(drop);
                    sh.core.mark_durable(last);
                }
            }
        }
        let mut outgoing = std::mem::take(&mut sh.outgoing);
        let mut at = std::mem::take(&mut sh.outgoing_at);
        while let Some(out) = sh.core.poll_output() {
            let (conn, frame, close) = match out {
                Output::Send { conn, frame } => (conn, frame, false),
                Output::Close { conn, reason } => {
                    if reason == rzk_core::CloseReason::SaslAuthFailed {
                        // As ZooKeeper warns of each; rzk_sasl_auth_failures_total counts them.
                        tracing::warn!(conn, "SASL authentication failed; closing the connection");
                    } else {
                        tracing::debug!(conn, ?reason, "closing connection");
                    }
                    (conn, Vec::new(), true)
                }
            };
            let replies = usize::from(!close && is_reply(&frame));
            match at.get(&conn) {
                Some(&i) => {
                    let o = &mut outgoing[i];
                    if !o.close {
                        o.bytes.extend_from_slice(&frame);
                        o.replies += replies;
                        o.close = close;
                    }
                }
                None => {
                    at.insert(conn, outgoing.len());
                    outgoing.push(Outgoing { conn, bytes: frame, replies, close, framed: true });
                }
            }
        }
        notifications_first(&mut outgoing);
        let mut flush =
            Flush::with_capacity(outgoing.len(), self.config.max_queued_bytes_per_connection);
        for out in outgoing.drain(..) {
            if let Some(h) = sh.conns.get(&out.conn) {
                h.out.push(out);
                flush.add(h.out.clone());
            }
        }
        at.clear();
        sh.outgoing = outgoing;
        sh.outgoing_at = at;
        if sh.core.next_deadline() < self.timer_target_ms.load(Ordering::SeqCst) {
            self.timer_wake.notify_one();
        }
        flush
    }
}

/// Orders one pump's connections so that those getting only notifications are written before
/// those getting replies, as ZooKeeper sends a change's watch events before the reply to the
/// request that made it. Each `sendto` to a client asleep on an idle CPU costs the sender its
/// wake-up, so in an idle election handoff writing the old leader's delete reply first delays
/// the successor's event by that wake-up. Each connection's own frames keep the core's order;
/// only connections are reordered.
fn notifications_first(outgoing: &mut [Outgoing]) {
    outgoing.sort_unstable_by_key(|o| o.replies > 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rzk_core::ConnId;

    fn out(conn: ConnId, replies: usize) -> Outgoing {
        Outgoing { conn, bytes: vec![conn as u8], replies, close: false, framed: true }
    }

    #[test]
    fn notified_connections_are_written_before_answered_ones() {
        let mut o = vec![out(1, 1), out(2, 0), out(3, 2), out(4, 0), out(5, 0)];
        notifications_first(&mut o);
        assert!(o[..3].iter().all(|o| o.replies == 0));
        assert!(o[3..].iter().all(|o| o.replies > 0));
        let mut conns: Vec<ConnId> = o.iter().map(|o| o.conn).collect();
        conns.sort_unstable();
        assert_eq!(conns, [1, 2, 3, 4, 5], "no connection lost or doubled");
    }
}
