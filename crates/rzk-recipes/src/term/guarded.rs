//! Guarded writes: a multi whose first operations check the term's fence (the holder's node
//! still exists; for a race leader, the epoch node is still at its version too).

use std::sync::Arc;

use rzk_client::{Client, CreateOptions, MultiWriteError, MultiWriteResult};

use crate::loss::LossReason;
use crate::term::guard::Term;
use crate::Error;

enum Op {
    Create { path: String, data: Vec<u8>, options: CreateOptions<'static> },
    SetData { path: String, data: Vec<u8>, version: Option<i32> },
    Delete { path: String, version: Option<i32> },
    Check { path: String, version: i32 },
}

impl Op {
    fn path(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::SetData { path, .. }
            | Op::Delete { path, .. }
            | Op::Check { path, .. } => path,
        }
    }
}

/// A multi guarded by the term's fence: a check that the leader's own node exists (and, for a
/// [`RaceElection`](crate::election::RaceElection), that the epoch node is still at the version its win
/// gave it). Build it with the `create`, `set_data`,
/// `delete` and `check` methods, then [`GuardedWrite::commit`].
pub struct GuardedWrite {
    term: Arc<Term>,
    client: Client,
    ops: Vec<Op>,
}

impl GuardedWrite {
    pub(crate) fn new(term: Arc<Term>, client: Client) -> GuardedWrite {
        GuardedWrite { term, client, ops: Vec::new() }
    }
}

impl std::fmt::Debug for GuardedWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedWrite")
            .field("node", &self.term.node_path)
            .field("ops", &self.ops.len())
            .finish()
    }
}

impl GuardedWrite {
    /// Adds a create.
    ///
    /// # Errors
    /// None today; the `Result` leaves room for validation.
    pub fn create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'static>,
    ) -> Result<&mut Self, Error> {
        self.ops.push(Op::Create { path: path.into(), data: data.into(), options: *options });
        Ok(self)
    }

    /// Adds a setData (`version: None` for any version).
    ///
    /// # Errors
    /// None today; the `Result` leaves room for validation.
    pub fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<&mut Self, Error> {
        self.ops.push(Op::SetData { path: path.into(), data: data.into(), version });
        Ok(self)
    }

    /// Adds a delete (`version: None` for any version).
    ///
    /// # Errors
    /// None today; the `Result` leaves room for validation.
    pub fn delete(&mut self, path: &str, version: Option<i32>) -> Result<&mut Self, Error> {
        self.ops.push(Op::Delete { path: path.into(), version });
        Ok(self)
    }

    /// Adds a version check (`-1` for existence).
    ///
    /// # Errors
    /// None today; the `Result` leaves room for validation.
    pub fn check(&mut self, path: &str, version: i32) -> Result<&mut Self, Error> {
        self.ops.push(Op::Check { path: path.into(), version });
        Ok(self)
    }

    /// Sends the multi `[fence checks..., ops...]` and returns one result per added operation.
    ///
    /// # Errors
    /// - [`Error::NotLeader`]: refused locally (the term is lost or its lease passed), or the
    ///   server found our node gone or (race) the epoch moved on (then the term's `lost()`
    ///   resolves with `NodeDeleted`), or our session expired. Not applied.
    /// - [`Error::OperationFailed`]: an operation failed after the check passed. Not applied.
    /// - [`Error::ConnectionLoss`]: **unknown** whether it was applied; find out before
    ///   retrying. The crate never retries a guarded write. Made while the session is
    ///   disconnected, the write fails so at once and is never sent: it does not wait for a
    ///   reconnect, when the term's loss may already have fired.
    /// - other ZooKeeper errors, by name.
    ///
    /// # Cancellation safety
    /// Not cancellation safe. The gate is checked and the request sent at the first poll;
    /// dropping the future after that leaves the outcome unknown. Dropping it before the first
    /// poll sends nothing.
    pub async fn commit(self) -> Result<Vec<MultiWriteResult>, Error> {
        let term = self.term;
        term.gate()?;
        let sent = crate::clock::now();
        let fence = term.fence.checks();
        let fut = {
            let mut w = self.client.new_multi_writer();
            for (path, version) in fence {
                w.add_check_version(path, *version).map_err(|e| Error::from_zk(e, path))?;
            }
            for op in &self.ops {
                let r = match op {
                    Op::Create { path, data, options } => w.add_create(path, data, options),
                    Op::SetData { path, data, version } => w.add_set_data(path, data, *version),
                    Op::Delete { path, version } => w.add_delete(path, *version),
                    Op::Check { path, version } => w.add_check_version(path, *version),
                };
                r.map_err(|e| Error::from_zk(e, op.path()))?;
            }
            // Never kept for a reconnect: by then the term's loss may have fired, and the
            // caller stopped acting, while this write would still land.
            w.commit_connected()
        };
        let fenced = |source: &rzk_client::Error| {
            matches!(source, rzk_client::Error::NoNode | rzk_client::Error::BadVersion)
        };
        match fut.await {
            Ok(mut results) => {
                term.session.ack(term.generation, sent);
                results.drain(..fence.len());
                Ok(results)
            }
            Err(MultiWriteError::RequestFailed { source: rzk_client::Error::SessionExpired }) => {
                term.lose(LossReason::SessionExpired);
                Err(term.not_leader(LossReason::SessionExpired))
            }
            Err(MultiWriteError::RequestFailed { source }) => Err(Error::from_zk(source, "")),
            // A fence check failed (the first is our node's): our node is gone, or (race) the
            // epoch moved on.
            Err(MultiWriteError::OperationFailed { index, source }) if index < fence.len() => {
                if !fenced(&source) {
                    return Err(Error::from_zk(source, &fence[index].0));
                }
                term.lose(LossReason::NodeDeleted);
                Err(term.not_leader(LossReason::NodeDeleted))
            }
            Err(MultiWriteError::OperationFailed { index, source }) => {
                let index = index - fence.len();
                let path = self.ops.get(index).map(|o| o.path()).unwrap_or("");
                term.session.ack(term.generation, sent);
                Err(Error::OperationFailed {
                    index,
                    source: Box::new(Error::from_zk(source, path)),
                })
            }
        }
    }
}
