//! Transactions: the only way [`crate::State`] changes.
//!
//! A transaction records the *outcome* of a request (final path with its sequence suffix,
//! the new version, the owner word), never the request itself, so replaying a log reproduces
//! the tree exactly without re-running validation.

use rzk_proto::Acl;

/// Marker in `ephemeral_owner` for a container node (`EphemeralType.CONTAINER`).
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// The high byte that marks a TTL node's owner word; the low 40 bits hold the TTL in ms.
pub const TTL_OWNER_HIGH_BYTE: u64 = 0xff;

/// The largest TTL a node can carry (`EphemeralType.MAX_TTL`), ms.
pub const TTL_MS_MAX: i64 = 0xff_ffff_ffff;

/// The owner word of a TTL node.
pub fn ttl_owner(ttl_ms: i64) -> i64 {
    ((TTL_OWNER_HIGH_BYTE << 56) | (ttl_ms as u64 & TTL_MS_MAX as u64)) as i64
}

/// The TTL of a node's owner word, if it is a TTL node.
pub fn owner_ttl_ms(owner: i64) -> Option<i64> {
    ((owner as u64) >> 56 == TTL_OWNER_HIGH_BYTE).then_some(owner & TTL_MS_MAX)
}

/// Whether the owner word marks an ordinary ephemeral owned by a session.
pub fn is_session_owner(owner: i64) -> bool {
    owner != 0 && owner != CONTAINER_OWNER && owner_ttl_ms(owner).is_none()
}

/// One state change with its zxid, wall-clock time and originating session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    /// Strictly increasing transaction id.
    pub zxid: i64,
    /// Wall-clock time when the server accepted the change, ms since the epoch; becomes
    /// ctime/mtime.
    pub time_ms: i64,
    /// The session that issued it (0 for server-internal changes such as container reaping).
    pub session_id: i64,
    /// What changed.
    pub op: TxnOp,
}

/// The body of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOp {
    /// A session was created.
    CreateSession {
        /// Negotiated timeout, ms.
        timeout_ms: i32,
        /// The session password.
        passwd: [u8; 16],
    },
    /// A session was closed or expired; its ephemerals go with it.
    CloseSession {
        /// The ephemerals it deleted, as the live tree held them (ZooKeeper's
        /// `CloseSessionTxn.paths2Delete`). Replay deletes these, not only those the recovered
        /// tree lists for the session: a fuzzy snapshot can record a parent, then miss a child
        /// that this close deleted before the walk reached it, and only replaying that delete
        /// brings the parent's pzxid forward (ZOOKEEPER-3145). Empty in logs written before
        /// the field existed.
        paths: Vec<String>,
    },
    /// A node was created.
    Create {
        /// Final path, including any sequence suffix.
        path: String,
        /// Initial data; `None` is a null buffer.
        data: Option<Vec<u8>>,
        /// ACL after fix-up.
        acl: Vec<Acl>,
        /// 0, a session id, [`CONTAINER_OWNER`] or a [`ttl_owner`] word.
        ephemeral_owner: i64,
        /// The parent's internal cversion after this create: an absolute value, so replaying
        /// the transaction twice changes nothing.
        parent_cversion: i32,
    },
    /// A node was deleted.
    Delete {
        /// The node.
        path: String,
    },
    /// A node's data changed.
    SetData {
        /// The node.
        path: String,
        /// New data; `None` is a null buffer.
        data: Option<Vec<u8>>,
        /// The node's new version.
        version: i32,
    },
    /// A node's ACL changed.
    SetAcl {
        /// The node.
        path: String,
        /// The new ACL.
        acl: Vec<Acl>,
        /// The node's new aversion.
        aversion: i32,
    },
    /// A version check inside a multi: no effect on the tree.
    Check {
        /// The node.
        path: String,
    },
    /// Several changes under one zxid, all applied or (as an `Error`) none.
    Multi(Vec<TxnOp>),
    /// A failed write: consumes a zxid and changes nothing, as in ZooKeeper.
    Error {
        /// The error code returned.
        err: i32,
    },
}
