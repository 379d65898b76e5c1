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
///
/// One pass and no sort: a woken successor decides on the critical path of every handoff, over
/// the whole list, so the decision is linear in N rather than a sort's N log N (the handoff
/// benchmark at N = 1,000 in docs/BENCHMARKS.md measures it). The answer is the one Curator's
/// sorted list gives: our position is the count of names ordered before ours, the predecessor
/// the greatest of them.
pub(crate) fn decide(children: &[String], own: &str, lock: &str) -> Decision {
    // Our UUID (orphans share it) and our sort key; `None` if our name is not ours to order.
    let ours =
        naming::parse(own, lock).map(|r| (r.uuid, (naming::sequence_number(r.sequence), own)));
    let mut foreign: Vec<String> = Vec::new();
    let mut orphans: Vec<(u64, &str)> = Vec::new();
    let mut found = false;
    let mut position = 0;
    let mut predecessor: Option<(u64, &str)> = None;
    for c in children {
        let Some(r) = naming::parse(c, lock) else {
            foreign.push(c.clone());
            continue;
        };
        let Some((own_uuid, own_key)) = ours else { continue };
        if c == own {
            found = true;
            continue;
        }
        let key = (naming::sequence_number(r.sequence), c.as_str());
        if r.uuid == own_uuid {
            orphans.push(key);
        } else if key < own_key {
            position += 1;
            if predecessor.is_none_or(|p| key > p) {
                predecessor = Some(key);
            }
        }
    }
    if !foreign.is_empty() {
        foreign.sort();
        return Decision::Foreign(foreign);
    }
    if !orphans.is_empty() {
        orphans.sort_unstable();
        return Decision::Orphans(orphans.into_iter().map(|(_, c)| c.to_string()).collect());
    }
    if !found {
        return Decision::Missing;
    }
    match predecessor {
        None => Decision::Leader,
        Some((_, p)) => Decision::Follow { predecessor: p.to_string(), position },
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

    /// The one-pass decision agrees with the sorted list Curator's driver builds.
    #[test]
    fn agrees_with_the_sorted_list() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for _ in 0..500 {
            let n = 1 + next(30) as usize;
            let kids: Vec<String> =
                (0..n).map(|_| node(next(64) as u32, LATCH, next(50) as u32)).collect();
            let mut kids = kids;
            kids.sort();
            kids.dedup();
            let own = kids[next(kids.len() as u64) as usize].clone();
            let (sorted, _) = naming::sort_children(&kids, LATCH);
            let prefix = naming::uuid_prefix(&own[3..39]);
            let mut orphans: Vec<String> = sorted
                .iter()
                .filter(|c| **c != own && c.starts_with(&prefix))
                .map(|c| c.to_string())
                .collect();
            let expected = if !orphans.is_empty() {
                Decision::Orphans(std::mem::take(&mut orphans))
            } else {
                match sorted.iter().position(|c| *c == own) {
                    Some(0) => Decision::Leader,
                    Some(i) => {
                        Decision::Follow { predecessor: sorted[i - 1].to_string(), position: i }
                    }
                    None => Decision::Missing,
                }
            };
            assert_eq!(decide(&kids, &own, LATCH), expected, "{kids:?} own {own}");
        }
    }
}
