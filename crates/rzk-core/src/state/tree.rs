//! [`State`]: the data tree, the session table and the indexes kept beside them, and the
//! queries on them. Only [`State::apply`] and the snapshot restore change it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rzk_proto::{Acl, Stat};

use crate::acl::AclCache;
use crate::path;
use crate::txn::{is_session_owner, owner_ttl_ms, CONTAINER_OWNER};

use super::node::{bare_node, data_len, Node, SessionRecord};
use super::table::NodeTable;

/// Nodes every ZooKeeper server has, which clients may not delete.
pub const SPECIAL_PATHS: [&str; 4] = ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"];

/// The data tree, the session table and the last applied zxid.
#[derive(Debug, Clone)]
pub struct State {
    pub(super) nodes: NodeTable,
    pub(super) acls: AclCache,
    pub(super) sessions: BTreeMap<i64, SessionRecord>,
    /// Ephemeral paths by owner. Kept apart from `sessions` so that a fuzzy snapshot can hold
    /// ephemerals of a session whose creation is replayed later.
    pub(super) ephemerals: HashMap<i64, BTreeSet<Box<str>>>,
    pub(super) containers: BTreeSet<Box<str>>,
    pub(super) ttls: BTreeSet<Box<str>>,
    pub(super) last_zxid: i64,
    pub(super) data_bytes: u64,
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
        let mut s = State::empty(0, BTreeMap::new(), 0);
        let open = s.acls.intern(&Acl::open());
        s.nodes.insert("/".into(), bare_node(open));
        for p in ["/zookeeper", "/zookeeper/quota"] {
            let acl = s.acls.intern(&Acl::open());
            s.insert_system_node(p, bare_node(acl));
        }
        let ro = s.acls.intern(&Acl::read_only());
        // ZooKeeper creates /zookeeper/config with aversion -1.
        let mut config = bare_node(ro);
        config.meta.aversion = -1;
        s.insert_system_node("/zookeeper/config", config);
        s
    }

    /// A state without a single node (not even the root), at `last_zxid`, with room for
    /// `nodes_hint` nodes.
    pub(super) fn empty(
        last_zxid: i64,
        sessions: BTreeMap<i64, SessionRecord>,
        nodes_hint: usize,
    ) -> State {
        State {
            nodes: NodeTable::with_capacity(nodes_hint),
            acls: AclCache::default(),
            sessions,
            ephemerals: HashMap::new(),
            containers: BTreeSet::new(),
            ttls: BTreeSet::new(),
            last_zxid,
            data_bytes: 0,
        }
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
        self.acls.get(node.meta.acl)
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
            czxid: node.meta.czxid,
            mzxid: node.meta.mzxid,
            ctime: node.meta.ctime,
            mtime: node.meta.mtime,
            version: node.meta.version,
            cversion: node.meta.cversion.wrapping_mul(2).wrapping_sub(num_children),
            aversion: node.meta.aversion,
            ephemeral_owner: if is_session_owner(node.meta.ephemeral_owner) {
                node.meta.ephemeral_owner
            } else {
                0
            },
            data_length: data_len(&node.data) as i32,
            num_children,
            pzxid: node.meta.pzxid,
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

    /// Adds a node to the map and to the indexes its owner word puts it in.
    pub(super) fn insert_entry(&mut self, p: &str, node: Node) {
        self.data_bytes += (data_len(&node.data) + p.len()) as u64;
        let owner = node.meta.ephemeral_owner;
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
    pub(super) fn remove_entry(&mut self, p: &str) -> Option<Node> {
        let node = self.nodes.remove(p)?;
        self.acls.release(node.meta.acl);
        self.data_bytes -= (data_len(&node.data) + p.len()) as u64;
        let owner = node.meta.ephemeral_owner;
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
}
