//! The node table: path to node, split into shards.
//!
//! One hash map doubles in one step, moving every node while the core's lock is held, and every
//! connection waits on that lock: at a million znodes that rehash was the server's longest
//! pause. Split [`SHARDS`] ways, each shard grows on its own, so one growth moves at most a
//! 64th of the table and the pause is bounded by the rehash of one shard; the shards reach
//! their thresholds at different writes, so the pauses do not add up
//! (`scripts/bench-stalls.py --workload populate` shows them). Each shard
//! keeps std's randomly keyed SipHash, so clients choosing paths cannot flood one bucket; the
//! shard index uses a fixed cheap hash, and paths crafted to share a shard only bring back one
//! big map's pauses.
//!
//! Nodes are boxed. A hash table is between 44% and 88% full (it doubles at 7/8), so every
//! bucket is paid for about twice: a bucket holding the node itself (104 bytes) would cost
//! about 220 bytes per znode, the larger part of the server's memory. A boxed node costs its
//! 96-byte allocation once and a 24-byte bucket twice; lookups pay one more pointer step.

use std::collections::HashMap;
use std::ops::Index;

use super::node::Node;

/// Number of shards (a power of two).
pub const SHARDS: usize = 64;
const SHARD_BITS: u32 = SHARDS.trailing_zeros();

#[derive(Debug, Clone)]
pub(crate) struct NodeTable {
    shards: Vec<HashMap<Box<str>, Box<Node>>>,
}

/// A word-at-a-time multiplicative hash (FxHash's step): one multiply per 8 bytes of path, and
/// its top bits are well mixed.
fn shard_of(path: &str) -> usize {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let bytes = path.as_bytes();
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 8];
    tail[..rest.len()].copy_from_slice(rest);
    h = (h.rotate_left(5) ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    (h >> (64 - SHARD_BITS)) as usize
}

impl NodeTable {
    pub(crate) fn with_capacity(nodes: usize) -> NodeTable {
        let each = nodes.div_ceil(SHARDS);
        NodeTable { shards: (0..SHARDS).map(|_| HashMap::with_capacity(each)).collect() }
    }

    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        self.shards[shard_of(path)].get(path).map(|n| &**n)
    }

    pub(crate) fn get_mut(&mut self, path: &str) -> Option<&mut Node> {
        self.shards[shard_of(path)].get_mut(path).map(|n| &mut **n)
    }

    pub(crate) fn contains_key(&self, path: &str) -> bool {
        self.shards[shard_of(path)].contains_key(path)
    }

    pub(crate) fn insert(&mut self, path: Box<str>, node: Node) -> Option<Node> {
        self.shards[shard_of(&path)].insert(path, Box::new(node)).map(|old| *old)
    }

    pub(crate) fn remove(&mut self, path: &str) -> Option<Node> {
        self.shards[shard_of(path)].remove(path).map(|old| *old)
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(HashMap::len).sum()
    }

    /// Every path, in no particular order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.shards.iter().flat_map(|s| s.keys().map(|k| &**k))
    }
}

impl Index<&str> for NodeTable {
    type Output = Node;

    fn index(&self, path: &str) -> &Node {
        self.get(path).expect("node present")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sequential names, the commonest shape of a big directory, spread evenly.
    #[test]
    fn sequential_paths_spread_over_the_shards() {
        let mut counts = [0usize; SHARDS];
        let n = 64_000;
        for i in 0..n {
            counts[shard_of(&format!("/app/locks/_c_lock-{i:010}"))] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        let mean = n / SHARDS;
        assert!(*min > mean * 3 / 4 && *max < mean * 5 / 4, "{min}..{max} around {mean}");
    }

    /// The memory budget the layout was chosen for: a bucket is a boxed path and a boxed node,
    /// and a node fits a 96-byte allocation (glibc's chunks are 16-byte multiples with an
    /// 8-byte header).
    #[test]
    fn buckets_and_nodes_stay_small() {
        assert_eq!(size_of::<(Box<str>, Box<Node>)>(), 24);
        assert!(size_of::<Node>() <= 88, "{}", size_of::<Node>());
    }

    #[test]
    fn one_table_whatever_the_shard() {
        let mut t = NodeTable::with_capacity(0);
        let node = crate::state::node::bare_node(0);
        for i in 0..1000 {
            assert!(t.insert(format!("/n{i}").into(), node.clone()).is_none());
        }
        assert_eq!(t.len(), 1000);
        assert!(t.contains_key("/n999") && t.get("/n1000").is_none());
        assert!(t.remove("/n5").is_some() && t.remove("/n5").is_none());
        let mut keys: Vec<&str> = t.keys().collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 999);
    }
}
