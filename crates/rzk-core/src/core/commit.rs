//! Committing transactions: apply to the state, queue for the log, fire the watches.

use rzk_proto::{perms, ErrorCode, EventType};

use crate::acl;
use crate::state::Applied;
use crate::txn::{Txn, TxnOp};

use super::frames::notification_frame;
use super::interface::{Now, Output};
use super::Core;

impl Core {
    /// Applies `op` as the next transaction, queues it for the log and queues the watch events it
    /// fires (to connections that may read the node). Returns its zxid and what it did.
    pub(super) fn commit(&mut self, session_id: i64, op: TxnOp, now: Now) -> (i64, Applied) {
        let txn = Txn { zxid: self.state.last_zxid() + 1, time_ms: now.wall_ms, session_id, op };
        let zxid = txn.zxid;
        let (applied, triggers) = match self.state.apply(&txn) {
            Ok(x) => x,
            // Prep validated this op against the same state, so this is a bug, not bad input.
            // Log it as an error transaction rather than take the server down.
            Err(e) => {
                debug_assert!(false, "validated txn failed to apply: {e}");
                let err = Txn { op: TxnOp::Error { err: ErrorCode::SystemError.as_i32() }, ..txn };
                let applied = self.state.apply(&err).expect("error txn always applies");
                self.txns.push(err);
                return (zxid, applied.0);
            }
        };
        self.txns.push(txn);
        for fired in &triggers {
            for (conn, event_type, path) in self.watches.trigger(&fired.trigger) {
                let acl = match event_type {
                    EventType::NodeChildrenChanged => fired.parent_acl.as_deref().unwrap_or(&[]),
                    _ => &fired.acl,
                };
                let may_read =
                    self.conns.get(&conn).is_some_and(|c| acl::check(acl, perms::READ, &c.auth));
                if may_read {
                    let frame = notification_frame(zxid, event_type, &path);
                    self.emit(zxid, Output::Send { conn, frame });
                }
            }
        }
        (zxid, applied)
    }

    /// Logs a failed write as an error transaction, as ZooKeeper does; returns its zxid.
    pub(super) fn commit_error(&mut self, session_id: i64, err: ErrorCode, now: Now) -> i64 {
        self.commit(session_id, TxnOp::Error { err: err.as_i32() }, now).0
    }

    /// Transactions applied since the last call, in zxid order, for the log.
    pub fn drain_txns(&mut self) -> std::vec::Drain<'_, Txn> {
        self.txns.drain(..)
    }

    /// Whether transactions are waiting for [`Core::drain_txns`].
    pub fn has_txns(&self) -> bool {
        !self.txns.is_empty()
    }
}
