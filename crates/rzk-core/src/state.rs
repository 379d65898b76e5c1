//! The replicated state: the data tree and the durable session table.
//!
//! [`State::apply`] is the only mutator, used both for live writes and for log replay, so a
//! recovered server is byte-for-byte the server that wrote the log.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::table::NodeTable;
use std::sync::Arc;

use rzk_proto::{Acl, Stat};

use crate::acl::{AclCache, AclId};
use crate::path;
use crate::txn::{is_session_owner, owner_ttl_ms, Txn, TxnOp, CONTAINER_OWNER};

/// A node's child names, sorted. Most znodes have none, so the set is boxed on the first child:
/// a leaf pays 8 bytes for it instead of a `BTreeSet`'s 24 (its boxed node then fits a 96-byte
/// allocation instead of a 112-byte one). Empty is always `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
// The box is the point: 8 bytes in every node instead of the set's 24 inline.
#[allow(clippy::box_collection)]
pub struct Children(Option<Box<BTreeSet<Box<str>>>>);

impl Children {
    /// How many.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |s| s.len())
    }

    /// None at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// In order.
    pub fn iter(&self) -> impl Iterator<Item = &Box<str>> + '_ {
        self.into_iter()
    }

    /// The names within `range`, in order.
    pub fn range<R: std::ops::RangeBounds<str>>(
        &self,
        range: R,
    ) -> impl Iterator<Item = &Box<str>> + '_ {
        self.0.as_deref().map(|s| s.range::<str, R>(range)).into_iter().flatten()
    }

    /// Adds `name`; false if it was there.
    pub fn insert(&mut self, name: Box<str>) -> bool {
        self.0.get_or_insert_with(Box::default).insert(name)
    }

    /// Removes `name`; false if it was not there.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(set) = self.0.as_mut() else { return false };
        let removed = set.remove(name);
        if set.is_empty() {
            self.0 = None;
        }
        removed
    }
}

impl<'a> IntoIterator for &'a Children {
    type Item = &'a Box<str>;
    type IntoIter = std::iter::Flatten<std::option::IntoIter<&'a BTreeSet<Box<str>>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.as_deref().into_iter().flatten()
    }
}

/// A znode as stored. `cversion` is ZooKeeper's internal child-create counter; clients see
/// `2 * cversion - num_children` (see [`State::stat_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node's data; `None` when written as a null buffer (clients read back null).
    pub data: Option<Box<[u8]>>,
    /// Child names, sorted so that listings and snapshots are deterministic.
    pub children: Children,
    /// Zxid of the create.
    pub czxid: i64,
    /// Zxid of the last data change.
    pub mzxid: i64,
    /// Zxid of the last child create or delete.
    pub pzxid: i64,
    /// Create time, ms since the epoch.
    pub ctime: i64,
    /// Last data change, ms since the epoch.
    pub mtime: i64,
    /// Owner word: 0, a session id, the container marker or a TTL word.
    pub ephemeral_owner: i64,
    /// Data version.
    pub version: i32,
    /// Internal count of child creations.
    pub cversion: i32,
    /// ACL version.
    pub aversion: i32,
    /// Interned ACL.
    pub acl: AclId,
}

/// A session as the durable state knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRecord {
    /// Negotiated timeout, ms.
    pub timeout_ms: i32,
    /// Password the client must present to resume.
    pub passwd: [u8; 16],
}

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

/// Nodes every ZooKeeper server has, which clients may not delete.
pub const SPECIAL_PATHS: [&str; 4] = ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

/// The data tree, the session table and the last applied zxid.
#[derive(Debug, Clone)]
pub struct State {
    nodes: NodeTable,
    acls: AclCache,
    sessions: BTreeMap<i64, SessionRecord>,
    /// Ephemeral paths by owner. Kept apart from `sessions` so that a fuzzy snapshot can hold
    /// ephemerals of a session whose creation is replayed later.
    ephemerals: HashMap<i64, BTreeSet<Box<str>>>,
    containers: BTreeSet<Box<str>>,
    ttls: BTreeSet<Box<str>>,
    last_zxid: i64,
    data_bytes: u64,
}

impl Default for State {
    fn default() -> Self {
        State::new()
    }
}

impl State {
    /// The tree a fresh ZooKeeper server starts with: `/`, `/zookeeper`, `/zookeeper/quota`
    /// and a read-only `/zookeeper/config`.
    pub fn new() -> State {
        let mut s = State {
            nodes: NodeTable::with_capacity(0),
            acls: AclCache::default(),
            sessions: BTreeMap::new(),
            ephemerals: HashMap::new(),
            containers: BTreeSet::new(),
            ttls: BTreeSet::new(),
            last_zxid: 0,
            data_bytes: 0,
        };
        let open = s.acls.intern(&Acl::open());
        s.nodes.insert("/".into(), bare_node(open));
        for p in ["/zookeeper", "/zookeeper/quota"] {
            let acl = s.acls.intern(&Acl::open());
            s.insert_system_node(p, bare_node(acl));
        }
        let ro = s.acls.intern(&Acl::read_only());
        // ZooKeeper creates /zookeeper/config with aversion -1.
        s.insert_system_node("/zookeeper/config", Node { aversion: -1, ..bare_node(ro) });
        s
    }

    /// System nodes are linked without bumping the parent's cversion, which is why a fresh
    /// `/zookeeper` shows cversion -2.
    fn insert_system_node(&mut self, p: &str, node: Node) {
        let parent = path::parent(p).expect("absolute");
        self.nodes.get_mut(parent).expect("parent").children.insert(path::name(p).into());
        self.nodes.insert(p.into(), node);
    }

    /// The last applied zxid.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// A node by path.
    pub fn node(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// The ACL of a node.
    pub fn acl_of(&self, node: &Node) -> &[Acl] {
        self.acls.get(node.acl)
    }

    /// Number of nodes, including the root.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Total bytes of data and path names, as `zk_approximate_data_size` reports.
    pub fn approximate_data_bytes(&self) -> u64 {
        self.data_bytes
    }

    /// The durable session table.
    pub fn sessions(&self) -> &BTreeMap<i64, SessionRecord> {
        &self.sessions
    }

    /// Ephemeral paths owned by a session, sorted.
    pub fn ephemerals_of(&self, session_id: i64) -> impl Iterator<Item = &str> {
        self.ephemerals.get(&session_id).into_iter().flat_map(|s| s.iter().map(|p| &**p))
    }

    /// Sessions that own ephemerals.
    pub fn ephemeral_owners(&self) -> impl Iterator<Item = i64> + '_ {
        self.ephemerals.keys().copied()
    }

    /// Number of ephemeral nodes.
    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.values().map(BTreeSet::len).sum()
    }

    /// Container nodes (candidates for reaping).
    pub fn containers(&self) -> &BTreeSet<Box<str>> {
        &self.containers
    }

    /// TTL nodes (candidates for expiry).
    pub fn ttl_nodes(&self) -> &BTreeSet<Box<str>> {
        &self.ttls
    }

    /// All paths, sorted: for snapshots, digests and `dump`.
    pub fn sorted_paths(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.nodes.keys().collect();
        v.sort_unstable();
        v
    }

    /// The Stat clients see for a node.
    pub fn stat_of(&self, node: &Node) -> Stat {
        let num_children = node.children.len() as i32;
        Stat {
            czxid: node.czxid,
            mzxid: node.mzxid,
            ctime: node.ctime,
            mtime: node.mtime,
            version: node.version,
            cversion: node.cversion.wrapping_mul(2).wrapping_sub(num_children),
            aversion: node.aversion,
            ephemeral_owner: if is_session_owner(node.ephemeral_owner) {
                node.ephemeral_owner
            } else {
                0
            },
            data_length: data_len(&node.data) as i32,
            num_children,
            pzxid: node.pzxid,
        }
    }

    /// Number of descendants, as `getAllChildrenNumber` counts them.
    pub fn descendant_count(&self, p: &str) -> usize {
        if p == "/" {
            return self.nodes.len() - 1;
        }
        let mut count = 0;
        let mut stack = vec![p.to_string()];
        while let Some(cur) = stack.pop() {
            if let Some(n) = self.nodes.get(cur.as_str()) {
                count += n.children.len();
                stack.extend(n.children.iter().map(|c| path::join(&cur, c)));
            }
        }
        count
    }

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
                node.version = *version;
                node.mzxid = zxid;
                node.mtime = txn.time_ms;
                self.data_bytes =
                    self.data_bytes - old_len + data.as_ref().map_or(0, Vec::len) as u64;
                let acl = self.acls.shared(self.nodes[path.as_str()].acl);
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
                let old_acl = std::mem::replace(&mut node.acl, new_acl);
                node.aversion = *aversion;
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
        let parent_path =
            path::parent(p).ok_or_else(|| ApplyError::NoNode { zxid, path: p.to_string() })?;
        if mode == Mode::Strict && is_session_owner(owner) && !self.sessions.contains_key(&owner) {
            return Err(ApplyError::Session { zxid, session_id: owner });
        }
        let parent = self.node_mut(zxid, parent_path)?;
        parent.children.insert(path::name(p).into());
        parent.cversion = parent_cversion;
        parent.pzxid = parent.pzxid.max(zxid);
        let parent_acl = parent.acl;
        let parent_acl = Some(self.acls.shared(parent_acl));
        let acl = self.acls.intern(acl);
        let node = Node {
            data: data.map(Box::from),
            children,
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
        };
        let stat = self.stat_of(&node);
        self.insert_entry(p, node);
        let acl = self.acls.shared(acl);
        triggers.push(Fired { trigger: Trigger::Created(p.to_string()), acl, parent_acl });
        Ok(stat)
    }

    /// Adds a node to the map and to the indexes its owner word puts it in.
    fn insert_entry(&mut self, p: &str, node: Node) {
        self.data_bytes += (data_len(&node.data) + p.len()) as u64;
        let owner = node.ephemeral_owner;
        if is_session_owner(owner) {
            self.ephemerals.entry(owner).or_default().insert(p.into());
        } else if owner == CONTAINER_OWNER {
            self.containers.insert(p.into());
        } else if owner_ttl_ms(owner).is_some() {
            self.ttls.insert(p.into());
        }
        self.nodes.insert(p.into(), node);
    }

    /// Removes a node from the map and its indexes, releasing its ACL. Does not touch the
    /// parent.
    fn remove_entry(&mut self, p: &str) -> Option<Node> {
        let node = self.nodes.remove(p)?;
        self.acls.release(node.acl);
        self.data_bytes -= (data_len(&node.data) + p.len()) as u64;
        let owner = node.ephemeral_owner;
        if is_session_owner(owner) {
            if let Some(set) = self.ephemerals.get_mut(&owner) {
                set.remove(p);
                if set.is_empty() {
                    self.ephemerals.remove(&owner);
                }
            }
        } else if owner == CONTAINER_OWNER {
            self.containers.remove(p);
        } else if owner_ttl_ms(owner).is_some() {
            self.ttls.remove(p);
        }
        Some(node)
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
                parent.pzxid = parent.pzxid.max(zxid);
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
            parent.pzxid = parent.pzxid.max(zxid);
            parent_acl = Some(parent.acl);
        }
        let parent_acl = parent_acl.map(|id| self.acls.shared(id));
        let acl = self.acls.shared(self.nodes[p].acl);
        self.remove_entry(p);
        triggers.push(Fired { trigger: Trigger::Deleted(p.to_string()), acl, parent_acl });
        Ok(())
    }
}

/// Length of a node's data; a null buffer has length 0, as in ZooKeeper's Stat.
pub fn data_len(data: &Option<Box<[u8]>>) -> usize {
    data.as_ref().map_or(0, |d| d.len())
}

fn bare_node(acl: AclId) -> Node {
    Node {
        data: Some(Box::new([])),
        children: Children::default(),
        czxid: 0,
        mzxid: 0,
        pzxid: 0,
        ctime: 0,
        mtime: 0,
        ephemeral_owner: 0,
        version: 0,
        cversion: 0,
        aversion: 0,
        acl,
    }
}

/// A node read back from a snapshot: everything but its children, which are relinked from
/// the paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredNode {
    /// Full path.
    pub path: String,
    /// Data; `None` for a null buffer.
    pub data: Option<Vec<u8>>,
    /// The ACL.
    pub acl: Vec<Acl>,
    /// Zxid of the create.
    pub czxid: i64,
    /// Zxid of the last data change.
    pub mzxid: i64,
    /// Zxid of the last child change.
    pub pzxid: i64,
    /// Create time.
    pub ctime: i64,
    /// Modification time.
    pub mtime: i64,
    /// Owner word.
    pub ephemeral_owner: i64,
    /// Data version.
    pub version: i32,
    /// Internal child-create count.
    pub cversion: i32,
    /// ACL version.
    pub aversion: i32,
}

/// A snapshot that cannot be turned back into a tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// A node whose parent is not in the snapshot.
    #[error("snapshot node {0} has no parent in the snapshot")]
    Orphan(String),
    /// The same path twice.
    #[error("snapshot holds {0} twice")]
    Duplicate(String),
    /// No root.
    #[error("snapshot has no root node")]
    NoRoot,
}

/// Builds a [`State`] from snapshot contents one node at a time, so that loading a large
/// snapshot never holds a second copy of the tree. Nodes must come parent first (a snapshot
/// is written in depth-first pre-order).
#[derive(Debug)]
pub struct StateBuilder {
    state: State,
}

impl StateBuilder {
    /// Adds one node and links it to its parent.
    ///
    /// # Errors
    /// [`RestoreError::Duplicate`], or [`RestoreError::Orphan`] when its parent has not been
    /// added.
    pub fn push(&mut self, n: RestoredNode) -> Result<(), RestoreError> {
        let s = &mut self.state;
        if s.nodes.contains_key(n.path.as_str()) {
            return Err(RestoreError::Duplicate(n.path));
        }
        if n.path != "/" {
            let parent = path::parent(&n.path).unwrap_or("/");
            match s.nodes.get_mut(parent) {
                Some(p) => {
                    p.children.insert(path::name(&n.path).into());
                }
                None => return Err(RestoreError::Orphan(n.path)),
            }
        }
        let acl = s.acls.intern(&n.acl);
        let node = Node {
            data: n.data.map(Vec::into_boxed_slice),
            children: Children::default(),
            czxid: n.czxid,
            mzxid: n.mzxid,
            pzxid: n.pzxid,
            ctime: n.ctime,
            mtime: n.mtime,
            ephemeral_owner: n.ephemeral_owner,
            version: n.version,
            cversion: n.cversion,
            aversion: n.aversion,
            acl,
        };
        s.insert_entry(&n.path, node);
        Ok(())
    }

    /// The finished state.
    ///
    /// # Errors
    /// [`RestoreError::NoRoot`] if no root was added.
    pub fn finish(self) -> Result<State, RestoreError> {
        if self.state.nodes.contains_key("/") {
            Ok(self.state)
        } else {
            Err(RestoreError::NoRoot)
        }
    }
}

impl State {
    /// Starts rebuilding a state at `last_zxid` with a session table.
    pub fn builder(
        last_zxid: i64,
        sessions: BTreeMap<i64, SessionRecord>,
        nodes_hint: usize,
    ) -> StateBuilder {
        StateBuilder {
            state: State {
                nodes: NodeTable::with_capacity(nodes_hint),
                acls: AclCache::default(),
                sessions,
                ephemerals: HashMap::new(),
                containers: BTreeSet::new(),
                ttls: BTreeSet::new(),
                last_zxid,
                data_bytes: 0,
            },
        }
    }

    /// Rebuilds a state from snapshot contents, parents before children.
    ///
    /// # Errors
    /// As [`StateBuilder::push`] and [`StateBuilder::finish`].
    pub fn restore(
        last_zxid: i64,
        sessions: BTreeMap<i64, SessionRecord>,
        nodes: Vec<RestoredNode>,
    ) -> Result<State, RestoreError> {
        let mut b = State::builder(last_zxid, sessions, nodes.len());
        for n in nodes {
            b.push(n)?;
        }
        b.finish()
    }

    /// The first difference between two states, for recovery checks; `None` if they are the
    /// same tree, sessions and zxid.
    pub fn difference(&self, other: &State) -> Option<String> {
        if self.last_zxid != other.last_zxid {
            return Some(format!("last zxid {:#x} vs {:#x}", self.last_zxid, other.last_zxid));
        }
        if self.sessions != other.sessions {
            return Some(format!(
                "sessions {:x?} vs {:x?}",
                self.sessions.keys().collect::<Vec<_>>(),
                other.sessions.keys().collect::<Vec<_>>()
            ));
        }
        let (a, b) = (self.sorted_paths(), other.sorted_paths());
        if a != b {
            let only_a: Vec<_> = a.iter().filter(|p| !other.nodes.contains_key(p)).collect();
            let only_b: Vec<_> = b.iter().filter(|p| !self.nodes.contains_key(p)).collect();
            return Some(format!("paths only in first {only_a:?}, only in second {only_b:?}"));
        }
        for p in a {
            let (x, y) = (&self.nodes[p], &other.nodes[p]);
            let same = x.data == y.data
                && x.children == y.children
                && self.stat_of(x) == other.stat_of(y)
                && x.cversion == y.cversion
                && x.ephemeral_owner == y.ephemeral_owner
                && self.acl_of(x) == other.acl_of(y);
            if !same {
                return Some(format!("node {p} differs: {x:?} vs {y:?}"));
            }
        }
        None
    }
}

/// A resumable depth-first (pre-order) walk of the tree, for fuzzy snapshots: each call holds
/// the caller's lock only for one chunk, and the tree may change between chunks. A node is
/// emitted before its children, so a parent always precedes its children in the output.
#[derive(Debug, Clone, Default)]
pub struct SnapshotCursor {
    /// (directory, last child emitted from it).
    stack: Vec<(String, Option<Box<str>>)>,
    started: bool,
}

impl SnapshotCursor {
    /// A cursor at the root.
    pub fn new() -> SnapshotCursor {
        SnapshotCursor::default()
    }

    /// Emits up to `max` nodes, continuing where the previous call stopped. Returns `true`
    /// while nodes remain.
    pub fn next_chunk(
        &mut self,
        state: &State,
        max: usize,
        mut emit: impl FnMut(&str, &Node, &[Acl]),
    ) -> bool {
        let mut emitted = 0;
        if !self.started {
            self.started = true;
            let root = &state.nodes["/"];
            emit("/", root, state.acl_of(root));
            emitted += 1;
            self.stack.push(("/".to_string(), None));
        }
        // One range search per directory per chunk, then a plain iteration: a range search per
        // child (a few dozen string compares down the B-tree) was most of a snapshot's cost
        // under a parent with many children.
        let mut path = String::new();
        while emitted < max {
            let Some((dir, last)) = self.stack.last_mut() else { return false };
            let Some(node) = state.nodes.get(dir.as_str()) else {
                self.stack.pop();
                continue;
            };
            let after = match last {
                None => std::ops::Bound::Unbounded,
                Some(l) => std::ops::Bound::Excluded(&**l),
            };
            let rest = node.children.range((after, std::ops::Bound::Unbounded));
            let mut seen = None;
            let mut descend = None;
            for child in rest {
                seen = Some(child);
                path.clear();
                path.push_str(dir);
                if dir != "/" {
                    path.push('/');
                }
                path.push_str(child);
                if let Some(n) = state.nodes.get(path.as_str()) {
                    emit(&path, n, state.acl_of(n));
                    emitted += 1;
                    // A node without children now is not revisited: any it gains later come
                    // after the snapshot's start and are replayed from the log.
                    if !n.children.is_empty() {
                        descend = Some(path.clone());
                        break;
                    }
                }
                if emitted >= max {
                    break;
                }
            }
            let Some(child) = seen else {
                self.stack.pop();
                continue;
            };
            *last = Some(child.clone());
            if let Some(d) = descend {
                self.stack.push((d, None));
            }
        }
        !self.stack.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::Children;

    #[test]
    fn children_stay_sorted_and_empty_is_unboxed() {
        let mut c = Children::default();
        assert_eq!((c.is_empty(), c.len(), c.iter().next()), (true, 0, None));
        assert!(!c.remove("a"));
        for name in ["c", "a", "b"] {
            assert!(c.insert(name.into()));
        }
        assert!(!c.insert("a".into()));
        assert_eq!(c.iter().map(|n| &**n).collect::<Vec<_>>(), ["a", "b", "c"]);
        let after_a = (std::ops::Bound::Excluded("a"), std::ops::Bound::Unbounded);
        assert_eq!(c.range(after_a).map(|n| &**n).collect::<Vec<_>>(), ["b", "c"]);
        for name in ["b", "a", "c"] {
            assert!(c.remove(name));
        }
        // Equality with a node that never had children depends on this.
        assert_eq!(c, Children::default());
        assert!(c.is_empty());
    }
}
