//! A recipe's ordering rule: the lock name its nodes are created with, the names it orders,
//! and which nodes sorted before ours keep ours waiting.

use crate::naming::{self, Recognized};

/// Curator's `InterProcessReadWriteLock` read marker (`READ_LOCK_NAME`).
pub(crate) const READ_MARKER: &str = "__READ__";
/// Curator's `InterProcessReadWriteLock` write marker (`WRITE_LOCK_NAME`).
pub(crate) const WRITE_MARKER: &str = "__WRIT__";

/// How a recipe orders the children of its path. Every recognised node sorts by the sequence
/// after its lock name (names of every kind in one order, as Curator sorts them); a name no
/// rule lock matches is foreign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The lock name our nodes are created with.
    pub lock: &'static str,
    /// Every lock name ordered on the path, ours among them.
    pub names: &'static [&'static str],
    /// The lock names whose nodes, sorted before ours, keep ours waiting; we watch the
    /// nearest of them.
    pub blockers: &'static [&'static str],
    /// A node carrying our sequence number never blocks ours. Only the read-write lock's
    /// downgrade shares a sequence: its read node is created at the sequence of the write
    /// node its holder holds, and a holder never waits for itself.
    pub same_sequence_passes: bool,
}

/// LeaderLatch: `latch-` nodes, a plain queue.
pub(crate) const LATCH: Rule = Rule::queue(&[naming::LATCH]);
/// InterProcessMutex and LeaderSelector: `lock-` nodes, a plain queue.
pub(crate) const LOCK: Rule = Rule::queue(&[naming::LOCK]);
/// InterProcessSemaphoreV2's lease nodes: `lease-` nodes in one order.
pub(crate) const LEASE: Rule = Rule::queue(&[naming::LEASE]);
/// The read side of InterProcessReadWriteLock: only a write node before ours blocks it.
pub(crate) const READ: Rule = Rule {
    lock: READ_MARKER,
    names: &[READ_MARKER, WRITE_MARKER],
    blockers: &[WRITE_MARKER],
    same_sequence_passes: true,
};
/// The write side of InterProcessReadWriteLock: any node before ours blocks it.
pub(crate) const WRITE: Rule = Rule {
    lock: WRITE_MARKER,
    names: &[READ_MARKER, WRITE_MARKER],
    blockers: &[READ_MARKER, WRITE_MARKER],
    same_sequence_passes: true,
};

impl Rule {
    /// One lock name; the first node holds and each waits for the one before it.
    const fn queue(names: &'static [&'static str; 1]) -> Rule {
        Rule { lock: names[0], names, blockers: names, same_sequence_passes: false }
    }

    /// Parses a child name under any of the rule's lock names; returns it with its lock name.
    pub fn parse<'a>(&self, name: &'a str) -> Option<(Recognized<'a>, &'static str)> {
        self.names.iter().find_map(|lock| naming::parse(name, lock).map(|r| (r, *lock)))
    }

    /// True if a node of lock name `lock` and sequence `sequence` sorted before ours (of
    /// sequence `own_sequence`) keeps ours waiting.
    pub fn blocks(&self, lock: &str, sequence: u64, own_sequence: u64) -> bool {
        self.blockers.contains(&lock) && !(self.same_sequence_passes && sequence == own_sequence)
    }

    /// True if, once a listing is read, no node that blocks ours can appear before ours, so
    /// that the listing without the nodes since deleted still decides (docs/election.md
    /// §2.10). Sequence numbers only grow, but the downgrade's read node is created at the
    /// sequence of its holder's write node, ahead of every writer queued behind it.
    pub fn blockers_only_leave(&self) -> bool {
        !(self.same_sequence_passes && self.blockers.contains(&READ_MARKER))
    }

    /// Children sorted the way Curator's lock drivers sort recognised names (by the suffix
    /// after the lock name), with the foreign ones apart.
    pub fn sort_children<'a>(&self, children: &'a [String]) -> (Vec<&'a str>, Vec<String>) {
        // Borrowed, not cloned: at N = 10,000 every join and handoff sorts the whole list.
        let mut recognized = Vec::with_capacity(children.len());
        let mut foreign = Vec::new();
        for c in children {
            match self.parse(c) {
                // Ten digits: the numeric order is the string order Curator sorts by.
                Some((r, _)) => recognized.push((naming::sequence_number(r.sequence), c.as_str())),
                None => foreign.push(c.clone()),
            }
        }
        // Names are unique, so the order is total and an unstable sort is exact.
        recognized.sort_unstable();
        foreign.sort();
        (recognized.into_iter().map(|(_, c)| c).collect(), foreign)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "0f8e2b9a-5c3d-4e1f-8a7b-6c5d4e3f2a1b";

    #[test]
    fn sorts_on_the_suffix() {
        let a = "_c_ffffffff-5c3d-4e1f-8a7b-6c5d4e3f2a1b-latch-0000000002".to_string();
        let b = "_c_00000000-5c3d-4e1f-8a7b-6c5d4e3f2a1b-latch-0000000010".to_string();
        let c = format!("_c_{U}-latch-0000000001");
        let children = [a.clone(), b.clone(), "junk".into(), c.clone()];
        let (sorted, foreign) = LATCH.sort_children(&children);
        assert_eq!(sorted, vec![c, a, b]);
        assert_eq!(foreign, vec!["junk".to_string()]);
    }

    #[test]
    fn queue_rules_order_their_own_name_only() {
        assert_eq!(LATCH.names, &[naming::LATCH]);
        assert_eq!(LOCK.names, &[naming::LOCK]);
        let latch = format!("_c_{U}-latch-0000000001");
        assert!(LATCH.parse(&latch).is_some());
        assert!(LOCK.parse(&latch).is_none());
    }

    #[test]
    fn read_write_rules_order_both_markers() {
        let read = format!("_c_{U}-__READ__0000000001");
        let write = format!("_c_{U}-__WRIT__0000000002");
        for rule in [READ, WRITE] {
            assert_eq!(rule.parse(&read).map(|(_, l)| l), Some(READ_MARKER));
            assert_eq!(rule.parse(&write).map(|(_, l)| l), Some(WRITE_MARKER));
            assert!(rule.parse(&format!("_c_{U}-lock-0000000003")).is_none());
        }
        assert!(!READ.blocks(READ_MARKER, 1, 5), "readers share");
        assert!(READ.blocks(WRITE_MARKER, 1, 5));
        assert!(WRITE.blocks(READ_MARKER, 1, 5));
        assert!(!READ.blocks(WRITE_MARKER, 5, 5), "the downgrade's writer");
        assert!(!WRITE.blocks(READ_MARKER, 5, 5), "the downgrade's reader");
        assert!(LOCK.blocks(naming::LOCK, 5, 5), "a queue breaks ties by name");
    }

    #[test]
    fn only_a_writer_can_see_a_blocker_arrive() {
        for rule in [LATCH, LOCK, LEASE, READ] {
            assert!(rule.blockers_only_leave(), "{}", rule.lock);
        }
        assert!(!WRITE.blockers_only_leave(), "the downgrade's read node");
    }
}
