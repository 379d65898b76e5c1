//! Rebuilding a [`State`] from a snapshot's contents, one node at a time.

use std::collections::BTreeMap;

use rzk_proto::Acl;

use crate::path;

use super::node::{Children, Node, NodeMeta, SessionRecord};
use super::tree::State;

/// A node read back from a snapshot: everything but its children, which are relinked from
/// the paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredNode {
    /// Full path.
    pub path: String,
    /// Data; `None` for a null buffer.
    pub data: Option<Vec<u8>>,
    /// Zxids, times, versions, owner and the ACL itself (interned as the node is pushed).
    pub meta: NodeMeta<Vec<Acl>>,
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
        let acl = s.acls.intern(&n.meta.acl);
        let node = Node {
            data: n.data.map(Vec::into_boxed_slice),
            children: Children::default(),
            meta: n.meta.with_acl(acl),
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
        StateBuilder { state: State::empty(last_zxid, sessions, nodes_hint) }
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
}
