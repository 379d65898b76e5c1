//! The pure decision step of both recipes: no I/O, unit-tested on data.

use crate::driver::rule::Rule;
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
    /// No blocking node sorts before ours (for a queue: ours sorts first).
    Leader,
    /// Our node has `position` blocking nodes before it; watch the nearest, `predecessor`.
    Follow {
        /// The name of the nearest blocking node before ours (for a queue, the one just
        /// before ours).
        predecessor: String,
        /// How many blocking nodes sort before ours.
        position: usize,
        /// The nearest blocking node before the predecessor, if any: where a follower looks
        /// past its predecessor (the driver's look-ahead).
        ahead: Option<String>,
    },
}

/// Decides for the participant owning `own` (a child name) under the recipe's `rule`.
///
/// One pass and no sort: a woken successor decides on the critical path of every handoff, over
/// the whole list, so the decision is linear in N rather than a sort's N log N (the handoff
/// benchmark at N = 1,000 in docs/BENCHMARKS.md measures it). The answer is the one Curator's
/// sorted list gives: our position is the count of blocking names ordered before ours, the
/// node to watch the greatest of them (for a queue, every name blocks: the predecessor), and
/// the look-ahead's the next greatest.
pub(crate) fn decide(children: &[String], own: &str, rule: &Rule) -> Decision {
    // Our UUID (orphans share it) and our sort key; `None` if our name is not ours to order.
    let ours = rule.parse(own).map(|(r, _)| (r.uuid, (naming::sequence_number(r.sequence), own)));
    let mut foreign: Vec<String> = Vec::new();
    let mut orphans: Vec<(u64, &str)> = Vec::new();
    let mut found = false;
    let mut position = 0;
    // The greatest blocking key before ours, and the one before it.
    let mut predecessor: Option<(u64, &str)> = None;
    let mut ahead: Option<(u64, &str)> = None;
    for c in children {
        let Some((r, lock)) = rule.parse(c) else {
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
        } else if key < own_key && rule.blocks(lock, key.0, own_key.0) {
            position += 1;
            if predecessor.is_none_or(|p| key > p) {
                ahead = predecessor.replace(key);
            } else if ahead.is_none_or(|a| key > a) {
                ahead = Some(key);
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
        Some((_, p)) => Decision::Follow {
            predecessor: p.to_string(),
            position,
            ahead: ahead.map(|(_, a)| a.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::rule::{self, READ_MARKER as R, WRITE_MARKER as W};
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
        assert_eq!(decide(&kids, &b, &rule::LATCH), Decision::Leader);
        assert_eq!(
            decide(&kids, &a, &rule::LATCH),
            Decision::Follow { predecessor: b.clone(), position: 1, ahead: None }
        );
        assert_eq!(
            decide(&kids, &c, &rule::LATCH),
            Decision::Follow { predecessor: a, position: 2, ahead: Some(b) }
        );
        assert_eq!(decide(&kids, &node(4, LATCH, 1), &rule::LATCH), Decision::Missing);
        assert_eq!(decide(&[], &node(4, LATCH, 1), &rule::LATCH), Decision::Missing);
    }

    #[test]
    fn foreign_children_refuse_even_when_first() {
        let own = node(1, LOCK, 1);
        let kazoo = "0123456789abcdef0123456789abcdef__lock__0000000009".to_string();
        let latch = node(2, LATCH, 0);
        for f in [kazoo, latch, "config".to_string(), format!("_c_{}", "x")] {
            let kids = vec![own.clone(), f.clone()];
            assert_eq!(decide(&kids, &own, &rule::LOCK), Decision::Foreign(vec![f]));
        }
        let negative = "_c_00000002-5c3d-4e1f-8a7b-6c5d4e3f2a1b-lock--000000001".to_string();
        assert_eq!(
            decide(&[own.clone(), negative.clone()], &own, &rule::LOCK),
            Decision::Foreign(vec![negative])
        );
    }

    #[test]
    fn orphans_with_our_uuid() {
        let own = node(7, LATCH, 4);
        let orphan = node(7, LATCH, 2);
        let other = node(8, LATCH, 1);
        assert_eq!(
            decide(&[own.clone(), orphan.clone(), other], &own, &rule::LATCH),
            Decision::Orphans(vec![orphan])
        );
    }

    /// A deterministic generator of numbers below its argument.
    fn xorshift(mut state: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        }
    }

    /// The one-pass decision agrees with the sorted list Curator's driver builds.
    #[test]
    fn agrees_with_the_sorted_list() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..500 {
            let n = 1 + next(30) as usize;
            let kids: Vec<String> =
                (0..n).map(|_| node(next(64) as u32, LATCH, next(50) as u32)).collect();
            let mut kids = kids;
            kids.sort();
            kids.dedup();
            let own = kids[next(kids.len() as u64) as usize].clone();
            let (sorted, _) = rule::LATCH.sort_children(&kids);
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
                    Some(i) => Decision::Follow {
                        predecessor: sorted[i - 1].to_string(),
                        position: i,
                        ahead: i.checked_sub(2).map(|a| sorted[a].to_string()),
                    },
                    None => Decision::Missing,
                }
            };
            assert_eq!(decide(&kids, &own, &rule::LATCH), expected, "{kids:?} own {own}");
        }
    }

    #[test]
    fn readers_share_writers_wait() {
        let r1 = node(1, R, 1);
        let r2 = node(2, R, 2);
        let w3 = node(3, W, 3);
        let r4 = node(4, R, 4);
        let w5 = node(5, W, 5);
        let r6 = node(6, R, 6);
        let kids = vec![r6.clone(), w5.clone(), r4.clone(), w3.clone(), r2.clone(), r1.clone()];
        assert_eq!(decide(&kids, &r1, &rule::READ), Decision::Leader);
        assert_eq!(decide(&kids, &r2, &rule::READ), Decision::Leader, "readers share");
        let behind_readers =
            Decision::Follow { predecessor: r2.clone(), position: 2, ahead: Some(r1.clone()) };
        assert_eq!(decide(&kids, &w3, &rule::WRITE), behind_readers);
        // A reader waits for the nearest writer before it, counts only writers, and looks
        // past it to the writer before, skipping readers.
        let behind_w3 = Decision::Follow { predecessor: w3.clone(), position: 1, ahead: None };
        assert_eq!(decide(&kids, &r4, &rule::READ), behind_w3);
        let behind_w5 =
            Decision::Follow { predecessor: w5.clone(), position: 2, ahead: Some(w3.clone()) };
        assert_eq!(decide(&kids, &r6, &rule::READ), behind_w5);
        assert_eq!(
            decide(&kids, &w5, &rule::WRITE),
            Decision::Follow { predecessor: r4, position: 4, ahead: Some(w3.clone()) }
        );
        let mutex = node(7, LOCK, 7);
        assert_eq!(
            decide(&[r1.clone(), mutex.clone()], &r1, &rule::READ),
            Decision::Foreign(vec![mutex])
        );
    }

    /// The downgrade's read node carries its writer's sequence: neither blocks the other, and
    /// a writer queued after them waits for both.
    #[test]
    fn downgrade_shares_the_writers_place() {
        let w = node(0xf, W, 3);
        let r = node(0x1, R, 3);
        let queued = node(2, W, 4);
        let reader = node(3, R, 5);
        let kids = vec![w.clone(), r.clone(), queued.clone(), reader.clone()];
        assert_eq!(decide(&kids, &w, &rule::WRITE), Decision::Leader);
        assert_eq!(decide(&kids, &r, &rule::READ), Decision::Leader);
        assert_eq!(
            decide(&kids, &queued, &rule::WRITE),
            Decision::Follow { predecessor: w.clone(), position: 2, ahead: Some(r.clone()) }
        );
        let after_release = vec![r.clone(), queued.clone(), reader.clone()];
        assert_eq!(decide(&after_release, &r, &rule::READ), Decision::Leader);
        assert_eq!(
            decide(&after_release, &queued, &rule::WRITE),
            Decision::Follow { predecessor: r, position: 1, ahead: None },
            "the queued writer never slips in before the downgraded read"
        );
        assert_eq!(
            decide(&after_release, &reader, &rule::READ),
            Decision::Follow { predecessor: queued, position: 1, ahead: None }
        );
    }

    /// The one-pass read-write decision agrees with the rule stated on the sorted list: a
    /// writer waits for every node before it, a reader for every writer before it, and a node
    /// of our own sequence never blocks.
    #[test]
    fn read_write_agrees_with_the_sorted_list() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..500 {
            let n = 1 + next(30) as usize;
            let mut kids: Vec<String> = (0..n)
                .map(|_| {
                    let marker = if next(2) == 0 { R } else { W };
                    node(next(64) as u32, marker, next(50) as u32)
                })
                .collect();
            kids.sort();
            kids.dedup();
            let own = kids[next(kids.len() as u64) as usize].clone();
            let writing = own.contains(W);
            let rule = if writing { rule::WRITE } else { rule::READ };
            let (sorted, _) = rule.sort_children(&kids);
            let seq = |c: &str| c[c.len() - 10..].to_string();
            let prefix = naming::uuid_prefix(&own[3..39]);
            let orphans: Vec<String> = sorted
                .iter()
                .filter(|c| **c != own && c.starts_with(&prefix))
                .map(|c| c.to_string())
                .collect();
            let i = sorted.iter().position(|c| *c == own).expect("own is listed");
            let blocking: Vec<&str> = sorted[..i]
                .iter()
                .copied()
                .filter(|c| (writing || c.contains(W)) && seq(c) != seq(&own))
                .collect();
            let expected = if !orphans.is_empty() {
                Decision::Orphans(orphans)
            } else {
                match blocking.last() {
                    None => Decision::Leader,
                    Some(p) => Decision::Follow {
                        predecessor: p.to_string(),
                        position: blocking.len(),
                        ahead: blocking.len().checked_sub(2).map(|a| blocking[a].to_string()),
                    },
                }
            };
            assert_eq!(decide(&kids, &own, &rule), expected, "{kids:?} own {own}");
        }
    }
}
