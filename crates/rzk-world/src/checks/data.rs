//! Invariants of the recipes whose work is data (the counter, the queue): what their callers
//! were told, against what the server holds once the world stops. An operation whose outcome
//! the caller could not know (its reply lost, its process crashed with it in flight) may have
//! happened or not; everything else must add up exactly.

use std::collections::{BTreeMap, BTreeSet};

/// What the counter's callers were told.
#[derive(Debug, Clone, Default)]
pub struct CounterLog {
    /// Each acknowledged increment: the value it replaced and the value it wrote.
    pub acked: Vec<(i64, i64)>,
    /// Increments whose outcome is unknown.
    pub unknown: usize,
}

/// The counter's value on the server is the number of increments applied: every acknowledged
/// one and some of the unknown ones; each acknowledged increment wrote its predecessor's value
/// plus one, and no two wrote the same value (they were applied one after another).
///
/// # Errors
/// The first violation.
pub fn counter_adds_up(log: &CounterLog, value: i64) -> Result<(), String> {
    if let Some((pre, post)) = log.acked.iter().find(|(pre, post)| *post != pre + 1) {
        return Err(format!("an increment of {pre} wrote {post}"));
    }
    let mut seen = BTreeSet::new();
    if let Some((_, post)) = log.acked.iter().find(|(_, post)| !seen.insert(*post)) {
        return Err(format!("two acknowledged increments wrote {post}"));
    }
    let acked = log.acked.len() as i64;
    let most = acked + log.unknown as i64;
    if value < acked || value > most {
        return Err(format!(
            "the counter holds {value} after {acked} acknowledged increments and {} unknown",
            log.unknown
        ));
    }
    Ok(())
}

/// What the queue's callers were told, by item id (each item's data is its id).
#[derive(Debug, Clone, Default)]
pub struct QueueLog {
    /// Every offer made, and whether it was acknowledged (else its outcome is unknown).
    pub offered: BTreeMap<u64, bool>,
    /// Every item a take returned, with the process it went to, in order.
    pub taken: Vec<(u64, usize)>,
    /// Takes whose outcome is unknown: an error, or a process that crashed mid-take.
    pub unknown_takes: usize,
    /// Queue handles the world made: each may hold one item its dropped take deleted, which
    /// its next take returns first, and which is lost when the handle dies with it.
    pub handles: usize,
}

/// No item is taken twice or taken and still queued; every item taken or queued was offered;
/// every acknowledged item is taken or still queued, but for as many as the unknown takes and
/// the handles' kept items can account for.
///
/// # Errors
/// The first violation.
pub fn queue_takes_once(log: &QueueLog, queued: &[u64]) -> Result<(), String> {
    let mut taken = BTreeMap::new();
    for &(id, process) in &log.taken {
        if let Some(first) = taken.insert(id, process) {
            return Err(format!("item {id:#x} taken twice, by p{first} and by p{process}"));
        }
    }
    let mut on_server = BTreeSet::new();
    for &id in queued {
        if !on_server.insert(id) {
            return Err(format!("item {id:#x} is queued twice"));
        }
        if let Some(p) = taken.get(&id) {
            return Err(format!("item {id:#x} was taken by p{p} and is still queued"));
        }
    }
    let offered = |id: &u64| log.offered.contains_key(id);
    if let Some(id) = taken.keys().chain(&on_server).find(|id| !offered(id)) {
        return Err(format!("item {id:#x} was never offered"));
    }
    let lost: Vec<u64> = (log.offered.iter())
        .filter(|&(id, &acked)| acked && !taken.contains_key(id) && !on_server.contains(id))
        .map(|(id, _)| *id)
        .collect();
    let excused = log.unknown_takes + log.handles;
    if lost.len() > excused {
        return Err(format!(
            "{} acknowledged items neither taken nor queued ({:x?}...), with {} unknown takes \
             and {} handles",
            lost.len(),
            &lost[..lost.len().min(4)],
            log.unknown_takes,
            log.handles
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_that_does_not_add_up_is_caught() {
        let log = CounterLog { acked: vec![(0, 1), (1, 2), (3, 4)], unknown: 1 };
        assert!(counter_adds_up(&log, 3).is_ok());
        assert!(counter_adds_up(&log, 4).is_ok());
        assert!(counter_adds_up(&log, 5).unwrap_err().contains("holds 5"));
        assert!(counter_adds_up(&log, 2).is_err());
        let twice = CounterLog { acked: vec![(0, 1), (0, 1)], unknown: 0 };
        assert!(counter_adds_up(&twice, 2).unwrap_err().contains("wrote 1"));
        let skip = CounterLog { acked: vec![(0, 2)], unknown: 0 };
        assert!(counter_adds_up(&skip, 1).unwrap_err().contains("of 0 wrote 2"));
    }

    #[test]
    fn a_queue_that_loses_or_doubles_an_item_is_caught() {
        let offered = [(1, true), (2, true), (3, false), (4, true)].into();
        let log = QueueLog { offered, taken: vec![(1, 0), (3, 1)], unknown_takes: 0, handles: 0 };
        assert!(queue_takes_once(&log, &[2, 4]).is_ok());
        assert!(queue_takes_once(&log, &[2]).unwrap_err().contains("neither taken nor queued"));
        assert!(queue_takes_once(&QueueLog { handles: 1, ..log.clone() }, &[2]).is_ok());
        assert!(queue_takes_once(&log, &[2, 4, 1]).unwrap_err().contains("still queued"));
        assert!(queue_takes_once(&log, &[2, 4, 9]).unwrap_err().contains("never offered"));
        let twice = QueueLog { taken: vec![(1, 0), (1, 2)], ..log };
        assert!(queue_takes_once(&twice, &[2, 4]).unwrap_err().contains("taken twice"));
    }
}
