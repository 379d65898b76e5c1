//! Shrinking a failing world to the few faults that break it.
//!
//! A failing seed's schedule holds dozens of faults; most are noise. The shrinker runs the
//! same seed again with faults left out ([`Kept`]; every fault is still drawn, so the ones
//! kept stay as they were): first the shortest prefix of the schedule that still fails
//! (bisection), then each fault of that prefix left out in turn, kept out if the world still
//! fails. What remains is 1-minimal: leaving out any one of its faults makes the world pass.
//! Any broken invariant counts as still failing, as in every delta-debugging shrinker; the
//! result names what it broke.

use std::time::Duration;

use crate::faults::Kept;
use crate::world::{run, Failure, Options, FAULT_GAP_MS_MIN};

/// Runs the shrinker may spend; past them it returns what it has.
const RUNS_MAX: usize = 400;

/// A failure reduced to fewer faults.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The failure of the reduced world: its `kept` replays it.
    pub failure: Failure,
    /// How many faults the reduced world applies.
    pub faults: usize,
    /// Worlds run to find it.
    pub runs: usize,
}

impl std::fmt::Display for Shrunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "shrunk to {} faults in {} runs:", self.faults, self.runs)?;
        write!(f, "{}", self.failure)
    }
}

/// Shrinks the failure of `seed` under `options`.
///
/// Returns `None` when that world does not fail (a failure that does not replay).
pub fn shrink(seed: u64, options: &Options) -> Option<Shrunk> {
    let runs = std::cell::Cell::new(0);
    let fails = |kept: &Kept| -> Option<Failure> {
        runs.set(runs.get() + 1);
        run(seed, &Options { kept: kept.clone(), ..options.clone() }).err()
    };
    // More faults than a world can draw: its gaps are at least FAULT_GAP_MS_MIN.
    let drawable = drawable(options.faulty);
    let mut failure = fails(&Kept::first(drawable))?;
    // The shortest failing prefix: `lo` faults pass (or are untried, at 0), `hi` fail.
    let (mut lo, mut hi) = (0, drawable);
    if let Some(f) = fails(&Kept::first(0)) {
        return Some(Shrunk { failure: f, faults: 0, runs: runs.get() });
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match fails(&Kept::first(mid)) {
            Some(f) => (hi, failure) = (mid, f),
            None => lo = mid,
        }
    }
    let mut kept: Vec<usize> = (0..hi).collect();
    // The last fault of the prefix is needed (without it the prefix passes); try the others,
    // latest first.
    for i in (0..hi.saturating_sub(1)).rev() {
        if runs.get() >= RUNS_MAX {
            break;
        }
        let without: Kept = Kept::Only(kept.iter().copied().filter(|&k| k != i).collect());
        if let Some(f) = fails(&without) {
            kept.retain(|&k| k != i);
            failure = f;
        }
    }
    Some(Shrunk { failure, faults: kept.len(), runs: runs.get() })
}

fn drawable(faulty: Duration) -> usize {
    (faulty.as_millis() as u64 / FAULT_GAP_MS_MIN) as usize + 1
}
