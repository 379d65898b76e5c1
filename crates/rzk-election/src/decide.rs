//! The pure decision step of both recipes: no I/O, unit-tested on data.

use crate::naming;

/// What a participant should do, given the children of the election path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Children this recipe cannot order are present: refuse to lead (never a second leader).
    Foreign(Vec<String>),
    /// Other children carry our own UUID: orphans of a raced protected-mode retry. Delete them
    /// and decide again.
    Orphans(Vec<String>),
    /// Our node is not among the children: rejoin (Curator's `reset()`).
    Missing,
    /// Our node sorts first.
    Leader,
    /// Our node has `position` nodes before it; watch the immediate `predecessor`.
    Follow {
        /// The name of the node just before ours.
        predecessor: String,
        /// How many nodes sort before ours.
        position: usize,
    },
}

/// Decides for the participant owning `own` (a child name) under lock name `lock`.
pub(crate) fn decide(children: &[String], own: &str, lock: &str) -> Decision {
    let (sorted, foreign) = naming::sort_children(children, lock);
    if !foreign.is_empty() {
        return Decision::Foreign(foreign);
    }
    let Some(own_parsed) = naming::parse(own, lock) else {
        return Decision::Missing;
    };
    let prefix = naming::uuid_prefix(own_parsed.uuid);
    // One pass for both: at N = 1,000 this runs on every handoff.
    let mut position = None;
    let mut orphans: Vec<String> = Vec::new();
    for (i, c) in sorted.iter().enumerate() {
        if *c == own {
            position = Some(i);
        } else if c.starts_with(&prefix) {
            orphans.push(c.to_string());
        }
    }
    if !orphans.is_empty() {
        return Decision::Orphans(orphans);
    }
    match position {
        None => Decision::Missing,
        Some(0) => Decision::Leader,
        Some(i) => Decision::Follow { predecessor: sorted[i - 1].to_string(), position: i },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::naming::{LATCH, LOCK};

    fn node(uuid_first: u32, lock: &str, seq: u32) -> String {
        format!("_c_{uuid_first:08x}-5c3d-4e1f-8a7b-6c5d4e3f2a1b-{lock}{seq:010}")
    }

    #[test]
    fn leader_follower_missing() {
        let a = node(1, LATCH, 5);
        let b = node(2, LATCH, 3);
        let c = node(3, LATCH, 9);
        let kids = vec![a.clone(), b.clone(), c.clone()];
        assert_eq!(decide(&kids, &b, LATCH), Decision::Leader);
        assert_eq!(decide(&kids, &a, LATCH), Decision::Follow { predecessor: b, position: 1 });
        assert_eq!(decide(&kids, &c, LATCH), Decision::Follow { predecessor: a, position: 2 });
        assert_eq!(decide(&kids, &node(4, LATCH, 1), LATCH), Decision::Missing);
        assert_eq!(decide(&[], &node(4, LATCH, 1), LATCH), Decision::Missing);
    }

    #[test]
    fn foreign_children_refuse_even_when_first() {
        let own = node(1, LOCK, 1);
        let kazoo = "0123456789abcdef0123456789abcdef__lock__0000000009".to_string();
        let latch = node(2, LATCH, 0);
        for f in [kazoo, latch, "config".to_string(), format!("_c_{}", "x")] {
            let kids = vec![own.clone(), f.clone()];
            assert_eq!(decide(&kids, &own, LOCK), Decision::Foreign(vec![f]));
        }
        let negative = "_c_00000002-5c3d-4e1f-8a7b-6c5d4e3f2a1b-lock--000000001".to_string();
        assert_eq!(
            decide(&[own.clone(), negative.clone()], &own, LOCK),
            Decision::Foreign(vec![negative])
        );
    }

    #[test]
    fn orphans_with_our_uuid() {
        let own = node(7, LATCH, 4);
        let orphan = node(7, LATCH, 2);
        let other = node(8, LATCH, 1);
        assert_eq!(
            decide(&[own.clone(), orphan.clone(), other], &own, LATCH),
            Decision::Orphans(vec![orphan])
        );
    }
}
