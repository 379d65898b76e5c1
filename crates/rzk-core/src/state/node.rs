//! The stored shape of a znode and of a session: [`Node`], its [`Children`], [`SessionRecord`].

use std::collections::BTreeSet;

use crate::acl::AclId;

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

/// What a znode carries besides its data and its children, declared once: the stored
/// [`Node`] holds it with its ACL interned (`A` = [`AclId`]), a node read back from a snapshot
/// ([`RestoredNode`](super::RestoredNode)) with the ACL itself. `cversion` is ZooKeeper's
/// internal child-create counter; clients see `2 * cversion - num_children` (see
/// [`State::stat_of`](super::State::stat_of)), the one conversion to the wire's `Stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMeta<A> {
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
    /// The ACL: interned in a stored node (4 bytes, in the padding the `i32`s leave).
    pub acl: A,
}

impl<A> NodeMeta<A> {
    /// The same metadata with the ACL `acl` (interned, or spelled out).
    pub fn with_acl<B>(self, acl: B) -> NodeMeta<B> {
        NodeMeta {
            czxid: self.czxid,
            mzxid: self.mzxid,
            pzxid: self.pzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            ephemeral_owner: self.ephemeral_owner,
            version: self.version,
            cversion: self.cversion,
            aversion: self.aversion,
            acl,
        }
    }
}

/// A znode as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node's data; `None` when written as a null buffer (clients read back null).
    pub data: Option<Box<[u8]>>,
    /// Child names, sorted so that listings and snapshots are deterministic.
    pub children: Children,
    /// Zxids, times, versions, owner and ACL.
    pub meta: NodeMeta<AclId>,
}

/// A session as the durable state knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRecord {
    /// Negotiated timeout, ms.
    pub timeout_ms: i32,
    /// Password the client must present to resume.
    pub passwd: [u8; 16],
}

/// Length of a node's data; a null buffer has length 0, as in ZooKeeper's Stat.
pub fn data_len(data: &Option<Box<[u8]>>) -> usize {
    data.as_ref().map_or(0, |d| d.len())
}

/// A node with empty data, no children, zero zxids and times, and the ACL `acl`: the shape of
/// the nodes every server starts with.
pub(super) fn bare_node(acl: AclId) -> Node {
    Node {
        data: Some(Box::new([])),
        children: Children::default(),
        meta: NodeMeta {
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
        },
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
