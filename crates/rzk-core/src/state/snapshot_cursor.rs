//! [`SnapshotCursor`]: the resumable tree walk behind fuzzy snapshots.

use rzk_proto::Acl;

use super::node::Node;
use super::tree::State;

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
