//! Writes: validated by `prep` into a transaction, committed, answered; a failed validation is
//! logged as an error transaction.

use rzk_proto::{ErrorCode, MultiOp, MultiResult, Response};

use crate::acl;
use crate::prep::{self, Caller};
use crate::state::Applied;
use crate::txn::TxnOp;
use crate::watches::ConnId;

use super::interface::Now;
use super::Core;

impl Core {
    /// Who is asking, and the limits their write is validated against.
    pub(super) fn caller(&self, conn: ConnId, session_id: i64) -> Caller<'_> {
        Caller {
            session_id,
            auth: &self.conns[&conn].auth,
            extended_types_enabled: self.config.extended_types_enabled,
            acl_limits: acl::AclLimits {
                entries_max: self.config.acl_entries_max,
                bytes_max: self.config.acl_bytes_max,
            },
            txn_acl_bytes_max: self.config.max_packet_bytes,
        }
    }

    /// Runs a validated single write, or logs its error, and replies.
    pub(super) fn write(
        &mut self,
        conn: ConnId,
        session_id: i64,
        xid: i32,
        prepped: Result<TxnOp, ErrorCode>,
        now: Now,
        respond: impl FnOnce(&Applied) -> Response,
    ) {
        match prepped {
            Ok(op) => {
                let (_, applied) = self.commit(session_id, op, now);
                let body = respond(&applied);
                self.reply(conn, xid, ErrorCode::Ok, Some(&body));
            }
            Err(err) => {
                self.commit_error(session_id, err, now);
                self.reply(conn, xid, err, None);
            }
        }
    }

    /// A multi: all its ops commit as one transaction, or none and one error transaction.
    pub(super) fn multi(
        &mut self,
        conn: ConnId,
        session_id: i64,
        xid: i32,
        ops: &[MultiOp],
        now: Now,
    ) {
        let prepped = prep::multi(&self.state, &self.caller(conn, session_id), ops);
        let results = match prepped {
            Ok(txn_ops) => {
                let (_, applied) = self.commit(session_id, TxnOp::Multi(txn_ops), now);
                let Applied::Multi(applied) = applied else {
                    self.reply(conn, xid, ErrorCode::SystemError, None);
                    return;
                };
                ops.iter()
                    .zip(applied)
                    .map(|(op, a)| match (op, a) {
                        (MultiOp::Create(c), Applied::Created { path, .. })
                            if c.op == rzk_proto::CreateOp::Create =>
                        {
                            MultiResult::Create { path }
                        }
                        (MultiOp::Create(_), Applied::Created { path, stat }) => {
                            MultiResult::Create2 { path, stat }
                        }
                        (_, Applied::Deleted) => MultiResult::Delete,
                        (_, Applied::DataSet(stat)) => MultiResult::SetData { stat },
                        _ => MultiResult::Check,
                    })
                    .collect()
            }
            Err((failed, err)) => {
                self.commit_error(session_id, err, now);
                (0..ops.len())
                    .map(|i| MultiResult::Error {
                        err: match i.cmp(&failed) {
                            std::cmp::Ordering::Less => 0,
                            std::cmp::Ordering::Equal => err.as_i32(),
                            std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency.as_i32(),
                        },
                    })
                    .collect()
            }
        };
        self.reply(conn, xid, ErrorCode::Ok, Some(&Response::Multi(results)));
    }
}
