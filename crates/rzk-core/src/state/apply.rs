//! [`State::apply`]: the only mutator of the state, for live writes and for log replay alike.

use std::sync::Arc;

use rzk_proto::{Acl, Stat};

use crate::path;
use crate::txn::{is_session_owner, Txn, TxnOp};

use super::node::{data_len, Children, Node, NodeMeta, SessionRecord};
use super::tree::State;

/// How [`State::apply`] treats a transaction that does not fit the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Live writes and log replay onto a consistent state: any misfit is an error.
    Strict,
    /// Replay onto a fuzzy snapshot, which may already reflect some transactions after its
    /// start zxid: creates replace, deletes of missing nodes and closes of missing sessions are
    /// no-ops. Every transaction records absolute values, so the end state is the same.
    Replay,
}

/// A change to report to watchers once the transaction that caused it is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// A node was created.
    Created(String),
    /// A node was deleted.
    Deleted(String),
    /// A node's data changed.
    DataChanged(String),
}

/// A trigger with the ACLs that decide who may hear of it: since CVE-2024-23944 ZooKeeper
/// delivers an event only to connections that may READ the node (the parent's ACL for
/// NodeChildrenChanged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// What changed.
    pub trigger: Trigger,
    /// The node's ACL (as it was, for a delete).
    pub acl: Arc<[Acl]>,
    /// The parent's ACL, for the parent's child event.
    pub parent_acl: Option<Arc<[Acl]>>,
}

/// The outcome of one (sub-)operation, used to build replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// A session was created.
    SessionCreated,
    /// A session was closed.
    SessionClosed,
    /// A node was created; its Stat right after the create.
    Created {
        /// Final path.
        path: String,
        /// Stat right after the create.
        stat: Stat,
    },
    /// A node was deleted.
    Deleted,
    /// Data was set; the Stat right after.
    DataSet(Stat),
    /// The ACL was set; the Stat right after.
    AclSet(Stat),
    /// A check passed.
    Checked,
    /// A multi: one entry per op.
    Multi(Vec<Applied>),
    /// An error transaction.
    Error(i32),
}

/// A transaction that does not fit the state it is applied to: a corrupt log or a bug.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// The zxid does not follow the last applied one.
    #[error("transaction zxid {zxid:#x} does not follow last zxid {last:#x}")]
    ZxidOrder {
        /// The transaction's zxid.
        zxid: i64,
        /// The state's last zxid.
        last: i64,
    },
    /// A node that must exist does not.
    #[error("transaction {zxid:#x} needs missing node {path}")]
    NoNode {
        /// The transaction's zxid.
        zxid: i64,
        /// The missing path.
        path: String,
    },
    /// A node that must not exist does.
    #[error("transaction {zxid:#x} creates existing node {path}")]
    NodeExists {
        /// The transaction's zxid.
        zxid: i64,
        /// The path.
        path: String,
    },
    /// A delete of a node that still has children.
    #[error("transaction {zxid:#x} deletes non-empty node {path}")]
    NotEmpty {
        /// The transaction's zxid.
        zxid: i64,
        /// The path.
        path: String,
    },
    /// A session that must exist does not, or exists twice.
    #[error("transaction {zxid:#x} has inconsistent session {session_id:#x}")]
    Session {
        /// The transaction's zxid.
        zxid: i64,
        /// The session.
        session_id: i64,
    },
}

impl State {
    /// Applies a transaction, returning what happened and which watches it fires.
    ///
    /// On error nothing has changed, except inside a multi whose earlier ops applied: a multi
    /// txn is only produced after validation, so that case means a corrupt log.
    pub fn apply(&mut self, txn: &Txn) -> Result<(Applied, Vec<Fired>), ApplyError> {
        self.apply_in(txn, Mode::Strict)
    }

    /// [`State::apply`] with an explicit [`Mode`].
    pub fn apply_in(&mut self, txn: &Txn, mode: Mode) -> Result<(Applied, Vec<Fired>), ApplyError> {
        if txn.zxid <= self.last_zxid {
            return Err(ApplyError::ZxidOrder { zxid: txn.zxid, last: self.last_zxid });
        }
        let mut triggers = Vec::new();
        let applied = self.apply_op(txn, &txn.op, mode, &mut triggers)?;
        self.last_zxid = txn.zxid;
        Ok((applied, triggers))
    }

    fn apply_op(
        &mut self,
        txn: &Txn,
        op: &TxnOp,
        mode: Mode,
        triggers: &mut Vec<Fired>,
    ) -> Result<Applied, ApplyError> {
        let zxid = txn.zxid;
        let strict = mode == Mode::Strict;
        Ok(match op {
            TxnOp::CreateSession { timeout_ms, passwd } => {
                let record = SessionRecord { timeout_ms: *timeout_ms, passwd: *passwd };
                if self.sessions.insert(txn.session_id, record).is_some() && strict {
                    return Err(ApplyError::Session { zxid, session_id: txn.session_id });
                }
                Applied::SessionCreated
            }
            TxnOp::CloseSession { paths } => {
                if self.sessions.remove(&txn.session_id).is_none() && strict {
                    return Err(ApplyError::Session { zxid, session_id: txn.session_id });
                }
                let mut owned = self.ephemerals.remove(&txn.session_id).unwrap_or_default();
                for p in paths {
                    owned.remove(p.as_str());
                    self.delete_node(zxid, p, mode, triggers)?;
                }
                for p in &owned {
                    self.delete_node(zxid, p, mode, triggers)?;
                }
                Applied::SessionClosed
            }
            TxnOp::Create { path, data, acl, ephemeral_owner, parent_cversion } => {
                let stat = self.create_node(
                    txn,
                    path,
                    data.as_deref(),
                    acl,
                    *ephemeral_owner,
                    *parent_cversion,
                    mode,
                    triggers,
                )?;
                Applied::Created { path: path.clone(), stat }
            }
            TxnOp::Delete { path } => {
                self.delete_node(zxid, path, mode, triggers)?;
                Applied::Deleted
            }
            TxnOp::SetData { path, data, version } => {
                if !strict && !self.nodes.contains_key(path.as_str()) {
                    return Ok(Applied::Deleted);
                }
                let node = self.node_mut(zxid, path)?;
                let old_len = data_len(&node.data) as u64;
                node.data = data.as_deref().map(Box::from);
                node.meta.version = *version;
                node.meta.mzxid = zxid;
                node.meta.mtime = txn.time_ms;
                self.data_bytes =
                    self.data_bytes - old_len + data.as_ref().map_or(0, Vec::len) as u64;
                let acl = self.acls.shared(self.nodes[path.as_str()].meta.acl);
                triggers.push(Fired {
                    trigger: Trigger::DataChanged(path.clone()),
                    acl,
                    parent_acl: None,
                });
                Applied::DataSet(self.stat_of(&self.nodes[path.as_str()]))
            }
            TxnOp::SetAcl { path, acl, aversion } => {
                if !strict && !self.nodes.contains_key(path.as_str()) {
                    return Ok(Applied::Deleted);
                }
                let new_acl = self.acls.intern(acl);
                let node = self.node_mut(zxid, path)?;
                let old_acl = std::mem::replace(&mut node.meta.acl, new_acl);
                node.meta.aversion = *aversion;
                self.acls.release(old_acl);
                Applied::AclSet(self.stat_of(&self.nodes[path.as_str()]))
            }
            TxnOp::Check { .. } => Applied::Checked,
            TxnOp::Multi(ops) => {
                let mut out = Vec::with_capacity(ops.len());
                for op in ops {
                    out.push(self.apply_op(txn, op, mode, triggers)?);
                }
                Applied::Multi(out)
            }
            TxnOp::Error { err } => Applied::Error(*err),
        })
    }

    fn node_mut(&mut self, zxid: i64, p: &str) -> Result<&mut Node, ApplyError> {
        self.nodes.get_mut(p).ok_or_else(|| ApplyError::NoNode { zxid, path: p.to_string() })
    }

    #[allow(clippy::too_many_arguments)]
    fn create_node(
        &mut self,
        txn: &Txn,
        p: &str,
        data: Option<&[u8]>,
        acl: &[Acl],
        owner: i64,
        parent_cversion: i32,
        mode: Mode,
        triggers: &mut Vec<Fired>,
    ) -> Result<Stat, ApplyError> {
        let zxid = txn.zxid;
        let parent_path =
            path::parent(p).ok_or_else(|| ApplyError::NoNode { zxid, path: p.to_string() })?;
        if mode == Mode::Replay && !self.nodes.contains_key(parent_path) {
            // The fuzzy snapshot was walked after a later transaction deleted the parent, and
            // this node before it (only an empty node is deleted): neither is in the end
            // state, so the create leaves nothing, as ZooKeeper's replay ignores its NoNode.
            return Ok(Stat { czxid: zxid, mzxid: zxid, pzxid: zxid, ..Stat::default() });
        }
        // On replay a fuzzy snapshot may already hold this node (or a later incarnation of it,
        // which later transactions will fix): replace it, keeping children already present.
        let mut children = Children::default();
        if let Some(old) = self.nodes.get(p) {
            if mode == Mode::Strict {
                return Err(ApplyError::NodeExists { zxid, path: p.to_string() });
            }
            children = old.children.clone();
            self.remove_entry(p);
        }
        if mode == Mode::Strict && is_session_owner(owner) && !self.sessions.contains_key(&owner) {
            return Err(ApplyError::Session { zxid, session_id: owner });
        }
        let parent = self.node_mut(zxid, parent_path)?;
        parent.children.insert(path::name(p).into());
        parent.meta.cversion = parent_cversion;
        parent.meta.pzxid = parent.meta.pzxid.max(zxid);
        let parent_acl = parent.meta.acl;
        let parent_acl = Some(self.acls.shared(parent_acl));
        let acl = self.acls.intern(acl);
        let node = Node {
            data: data.map(Box::from),
            children,
            meta: NodeMeta {
                czxid: zxid,
                mzxid: zxid,
                pzxid: zxid,
                ctime: txn.time_ms,
                mtime: txn.time_ms,
                ephemeral_owner: owner,
                version: 0,
                cversion: 0,
                aversion: 0,
                acl,
            },
        };
        let stat = self.stat_of(&node);
        self.insert_entry(p, node);
        let acl = self.acls.shared(acl);
        triggers.push(Fired { trigger: Trigger::Created(p.to_string()), acl, parent_acl });
        Ok(stat)
    }

    fn delete_node(
        &mut self,
        zxid: i64,
        p: &str,
        mode: Mode,
        triggers: &mut Vec<Fired>,
    ) -> Result<(), ApplyError> {
        let Some(node) = self.nodes.get(p) else {
            if mode == Mode::Strict {
                return Err(ApplyError::NoNode { zxid, path: p.into() });
            }
            if let Some(parent) = path::parent(p).and_then(|pp| self.nodes.get_mut(pp)) {
                parent.children.remove(path::name(p));
                parent.meta.pzxid = parent.meta.pzxid.max(zxid);
            }
            return Ok(());
        };
        if !node.children.is_empty() {
            if mode == Mode::Strict {
                return Err(ApplyError::NotEmpty { zxid, path: p.to_string() });
            }
            // A fuzzy snapshot caught children whose own deletes come earlier in the log than
            // this one was taken; they cannot outlive their parent.
            let kids: Vec<String> = node.children.iter().map(|c| path::join(p, c)).collect();
            for kid in kids {
                self.delete_node(zxid, &kid, mode, &mut Vec::new())?;
            }
        }
        let parent_path =
            path::parent(p).ok_or_else(|| ApplyError::NoNode { zxid, path: p.into() })?;
        let mut parent_acl = None;
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            parent.children.remove(path::name(p));
            parent.meta.pzxid = parent.meta.pzxid.max(zxid);
            parent_acl = Some(parent.meta.acl);
        }
        let parent_acl = parent_acl.map(|id| self.acls.shared(id));
        let acl = self.acls.shared(self.nodes[p].meta.acl);
        self.remove_entry(p);
        triggers.push(Fired { trigger: Trigger::Deleted(p.to_string()), acl, parent_acl });
        Ok(())
    }
}
