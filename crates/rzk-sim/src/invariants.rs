//! The properties the simulator checks, one function each. Each returns a description of the
//! violation, which the simulator reports with the seed and step.

use std::collections::HashMap;

use rzk_core::{State, Txn};

/// The zxid strictly increases: every transaction follows the previous one by exactly 1.
pub fn zxid_strictly_increases(prev: i64, txn: &Txn) -> Result<(), String> {
    if txn.zxid == prev + 1 {
        Ok(())
    } else {
        Err(format!("zxid {:#x} follows {prev:#x}", txn.zxid))
    }
}

/// Every ephemeral is owned by a live session.
pub fn ephemerals_have_live_owners(state: &State) -> Result<(), String> {
    for owner in state.ephemeral_owners() {
        if !state.sessions().contains_key(&owner) {
            let paths: Vec<&str> = state.ephemerals_of(owner).collect();
            return Err(format!("ephemerals {paths:?} owned by dead session {owner:#x}"));
        }
    }
    Ok(())
}

/// A session restored by recovery lives a full timeout from the moment the server serves
/// again: `protected` are the restored sessions alive before a tick whose timeout, counted
/// from then, had not run out; the tick must not have expired any of them.
pub fn restored_sessions_keep_their_timeout(
    protected: &[i64],
    after_tick: &State,
) -> Result<(), String> {
    match protected.iter().find(|id| !after_tick.sessions().contains_key(id)) {
        None => Ok(()),
        Some(id) => Err(format!("restored session {id:#x} expired before its full timeout")),
    }
}

/// Sequential suffixes increase per parent, in the order clients see them acknowledged.
pub fn sequence_increases(
    last: &mut HashMap<String, i64>,
    parent: &str,
    seq: i64,
) -> Result<(), String> {
    let prev = last.insert(parent.to_string(), seq);
    match prev {
        Some(p) if p >= seq => Err(format!("sequence under {parent} went from {p} to {seq}")),
        _ => Ok(()),
    }
}

/// After a crash, recovery lands between what was durable and what was written, and the tree
/// equals a fresh replay of exactly that prefix of the history.
pub fn recovery_matches_replay(
    recovered: &State,
    history: &[Txn],
    durable_zxid: i64,
    max_acked_zxid: i64,
) -> Result<(), String> {
    let z = recovered.last_zxid();
    let written = history.last().map_or(0, |t| t.zxid);
    if z < durable_zxid || z > written {
        return Err(format!(
            "recovered zxid {z:#x} outside [durable {durable_zxid:#x}, written {written:#x}]"
        ));
    }
    if z < max_acked_zxid {
        return Err(format!(
            "acknowledged zxid {max_acked_zxid:#x} lost; recovered only to {z:#x}"
        ));
    }
    let mut expected = State::new();
    for t in history.iter().take_while(|t| t.zxid <= z) {
        expected.apply(t).map_err(|e| format!("history does not replay: {e}"))?;
    }
    match recovered.difference(&expected) {
        None => Ok(()),
        Some(d) => Err(format!("recovered state differs from the replay of the log: {d}")),
    }
}
