//! The mirror itself: nodes by path, and the events each change of it makes. Pure: the
//! engine decides what to read, this decides what changed.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::event::{CacheEvent, CachedNode};

/// The mirrored nodes, sorted by path, so that a node's descendants are one range after it.
#[derive(Debug, Default)]
pub(super) struct Model {
    nodes: BTreeMap<String, CachedNode>,
}

/// What [`Model::put`] refused: the node would be one more than the limit allows.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Full;

impl Model {
    pub fn get(&self, path: &str) -> Option<&CachedNode> {
        self.nodes.get(path)
    }

    pub fn nodes(&self) -> &BTreeMap<String, CachedNode> {
        &self.nodes
    }

    /// Records `node` at `path`: `Added` if new, `Updated` if its `mzxid` moved, nothing if it
    /// is the state already held. A node with another `czxid` is another node (deleted and
    /// created again unseen): the old one and its subtree are removed first.
    pub fn put(
        &mut self,
        path: &str,
        node: CachedNode,
        max_nodes: usize,
        out: &mut Vec<CacheEvent>,
    ) -> Result<(), Full> {
        if let Some(old) = self.nodes.get(path) {
            if old.stat.czxid == node.stat.czxid {
                if old.stat.mzxid != node.stat.mzxid || old.data != node.data {
                    let old = self.nodes.insert(path.to_string(), node.clone()).expect("held");
                    out.push(CacheEvent::Updated { path: path.to_string(), old, node });
                }
                return Ok(());
            }
            self.remove_subtree(path, out);
        }
        if self.nodes.len() >= max_nodes {
            return Err(Full);
        }
        self.nodes.insert(path.to_string(), node.clone());
        out.push(CacheEvent::Added { path: path.to_string(), node });
        Ok(())
    }

    /// Removes `path` and everything below it, children before parents.
    pub fn remove_subtree(&mut self, path: &str, out: &mut Vec<CacheEvent>) {
        let mut doomed = self.descendants(path);
        if self.nodes.contains_key(path) {
            doomed.push(path.to_string());
        }
        // Sorted order puts every node after its ancestors; reversed, before them.
        doomed.sort();
        for p in doomed.into_iter().rev() {
            if let Some(node) = self.nodes.remove(&p) {
                out.push(CacheEvent::Removed { path: p, node });
            }
        }
    }

    /// The names of the children of `path` the model holds.
    pub fn children(&self, path: &str) -> Vec<String> {
        let prefix = child_prefix(path);
        self.below(&prefix)
            .map(|p| &p[prefix.len()..])
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .map(str::to_string)
            .collect()
    }

    fn descendants(&self, path: &str) -> Vec<String> {
        self.below(&child_prefix(path)).map(str::to_string).collect()
    }

    /// The paths that start with `prefix`.
    fn below<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.nodes
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .map(|(p, _)| p.as_str())
            .take_while(move |p| p.starts_with(prefix))
    }
}

/// What the paths of `path`'s children start with.
pub(super) fn child_prefix(path: &str) -> String {
    if path == "/" {
        "/".to_string()
    } else {
        format!("{path}/")
    }
}

/// The path of child `name` of `path`.
pub(super) fn child_of(path: &str, name: &str) -> String {
    format!("{}{name}", child_prefix(path))
}

/// How many levels `path` lies below `root` (0 for `root` itself); `None` if it is not at or
/// below `root`.
pub(super) fn depth_below(root: &str, path: &str) -> Option<usize> {
    if path == root {
        return Some(0);
    }
    let rest = path.strip_prefix(&child_prefix(root))?;
    Some(rest.split('/').count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rzk_client::Stat;

    fn node(czxid: i64, mzxid: i64, data: &str) -> CachedNode {
        let stat = Stat {
            czxid,
            mzxid,
            pzxid: 0,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: 0,
        };
        CachedNode { data: data.as_bytes().to_vec(), stat }
    }

    fn kinds(out: &[CacheEvent]) -> Vec<String> {
        out.iter()
            .map(|e| match e {
                CacheEvent::Added { path, .. } => format!("+{path}"),
                CacheEvent::Updated { path, .. } => format!("~{path}"),
                CacheEvent::Removed { path, .. } => format!("-{path}"),
                CacheEvent::Initialized => "init".into(),
            })
            .collect()
    }

    #[test]
    fn events_are_the_difference() {
        let mut m = Model::default();
        let mut out = Vec::new();
        m.put("/a", node(1, 1, "x"), 10, &mut out).unwrap();
        m.put("/a/b", node(2, 2, ""), 10, &mut out).unwrap();
        m.put("/a-b", node(3, 3, ""), 10, &mut out).unwrap();
        m.put("/a/b/c", node(4, 4, ""), 10, &mut out).unwrap();
        m.put("/a", node(1, 1, "x"), 10, &mut out).unwrap();
        m.put("/a", node(1, 5, "y"), 10, &mut out).unwrap();
        assert_eq!(kinds(&out), ["+/a", "+/a/b", "+/a-b", "+/a/b/c", "~/a"]);
        assert_eq!(m.children("/a"), ["b"]);
        assert_eq!(m.children("/"), ["a", "a-b"]);
        out.clear();
        m.remove_subtree("/a", &mut out);
        assert_eq!(kinds(&out), ["-/a/b/c", "-/a/b", "-/a"]);
        assert_eq!(m.nodes().len(), 1);
    }

    #[test]
    fn depth_is_counted_from_the_root() {
        assert_eq!(depth_below("/a", "/a"), Some(0));
        assert_eq!(depth_below("/a", "/a/b"), Some(1));
        assert_eq!(depth_below("/a", "/a/b/c"), Some(2));
        assert_eq!(depth_below("/a", "/ab"), None);
        assert_eq!(depth_below("/", "/x/y"), Some(2));
    }

    #[test]
    fn recreated_node_is_removed_then_added_and_limit_holds() {
        let mut m = Model::default();
        let mut out = Vec::new();
        m.put("/a", node(1, 1, "x"), 2, &mut out).unwrap();
        m.put("/a/b", node(2, 2, ""), 2, &mut out).unwrap();
        assert_eq!(m.put("/c", node(3, 3, ""), 2, &mut out), Err(Full));
        out.clear();
        m.put("/a", node(9, 9, "x"), 2, &mut out).unwrap();
        assert_eq!(kinds(&out), ["-/a/b", "-/a", "+/a"]);
    }
}
