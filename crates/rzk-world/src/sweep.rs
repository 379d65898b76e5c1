//! Many seeds on several threads: the sweep `cargo test` runs and the soak binary's.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::world::{run, Failure, Options};

/// Seeds between two progress lines on standard error.
const PROGRESS_EVERY: u64 = 1_000;

/// What a sweep's worlds did, all together.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Worlds run.
    pub seeds: u64,
    /// Holds of every recipe.
    pub holds: u64,
    /// Acknowledged guarded writes.
    pub writes: u64,
    /// Faults applied.
    pub faults: u64,
    /// Server crashes among them.
    pub crashes: u64,
    /// The sweep's wall time.
    pub elapsed: Duration,
}

/// Runs the worlds of seeds `first..first + seeds` under `options` on `threads` threads (each
/// world's seeded sources are its thread's), each thread taking the next seed in turn.
///
/// # Errors
/// The first failure; the sweep stops at it (the other threads finish the world they run).
pub fn sweep(first: u64, seeds: u64, threads: usize, options: &Options) -> Result<Totals, Failure> {
    let next = AtomicU64::new(first);
    let stop = AtomicBool::new(false);
    let failed: Mutex<Option<Failure>> = Mutex::new(None);
    let totals = Mutex::new(Totals::default());
    let t = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + seeds {
                        return;
                    }
                    match run(seed, options) {
                        Ok(o) => {
                            let mut s = totals.lock().expect("no panic holding the totals");
                            s.seeds += 1;
                            s.holds += o.holds as u64;
                            s.writes += o.writes as u64;
                            s.faults += o.faults as u64;
                            s.crashes += o.crashes;
                        }
                        Err(f) => {
                            stop.store(true, Ordering::Relaxed);
                            failed.lock().expect("no panic holding it").get_or_insert(f);
                        }
                    }
                    if (seed + 1 - first) % PROGRESS_EVERY == 0 {
                        eprintln!("{} seeds, {:.0?}", seed + 1 - first, t.elapsed());
                    }
                }
            });
        }
    });
    if let Some(f) = failed.into_inner().expect("no panic holding it") {
        return Err(f);
    }
    let mut totals = totals.into_inner().expect("no panic holding the totals");
    totals.elapsed = t.elapsed();
    Ok(totals)
}
