//! [`State::difference`]: the first difference between two states, for the recovery checks
//! of the tests and the simulator.

use super::tree::State;

impl State {
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
                && x.meta.cversion == y.meta.cversion
                && x.meta.ephemeral_owner == y.meta.ephemeral_owner
                && self.acl_of(x) == other.acl_of(y);
            if !same {
                return Some(format!("node {p} differs: {x:?} vs {y:?}"));
            }
        }
        None
    }
}
