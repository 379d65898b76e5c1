//! The world under many seeds: every run must keep every invariant, and a seed must replay
//! the same world.
//!
//! - `RZK_WORLD_SEED=S`: run that one seed (a failure's replay), printing its trace;
//! - `RZK_WORLD_SEEDS=N`: how many seeds the sweep runs (default [`SEEDS_DEFAULT`]);
//! - `RZK_WORLD_FIRST=F`: the sweep's first seed (default 0), for soak runs elsewhere.

use std::time::Instant;

use rzk_world::{run, Options};

/// Seeds run twice by the replay test.
const REPLAYED_SEEDS: u64 = 5;
/// Seeds the sweep runs in `cargo test`.
const SEEDS_DEFAULT: u64 = 20;

fn env(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}={v}: not a number")))
}

#[test]
fn every_seed_keeps_the_invariants() {
    let mut options = Options::default();
    if std::env::var("RZK_WORLD_BUG").is_ok_and(|b| b == "lease") {
        options.bug = Some(rzk_recipes::bugs::Bug::LeaseTrustsRequestedTimeout);
    }
    if let Some(seed) = env("RZK_WORLD_SEED") {
        match run(seed, &options) {
            Ok(o) => {
                for line in &o.trace {
                    println!("  {line}");
                }
                println!(
                    "seed {seed}: {} holds, {} writes, {} faults",
                    o.holds, o.writes, o.faults
                );
            }
            Err(f) => panic!("{f}"),
        }
        return;
    }
    let first = env("RZK_WORLD_FIRST").unwrap_or(0);
    let n = env("RZK_WORLD_SEEDS").unwrap_or(SEEDS_DEFAULT);
    let t = Instant::now();
    let (mut holds, mut writes, mut faults, mut crashes) = (0, 0, 0, 0);
    for seed in first..first + n {
        match run(seed, &options) {
            Ok(o) => {
                holds += o.holds;
                writes += o.writes;
                faults += o.faults;
                crashes += o.crashes;
            }
            Err(f) => panic!("{f}"),
        }
    }
    println!(
        "{n} seeds in {:?}: {holds} holds, {writes} guarded writes, {faults} faults ({crashes} server crashes)",
        t.elapsed()
    );
    assert!(holds as u64 > 10 * n, "the worlds did too little: {holds} holds");
}

#[test]
#[cfg_attr(not(tokio_unstable), allow(unreachable_code))]
fn a_seed_replays_the_same_world() {
    #[cfg(not(tokio_unstable))]
    panic!(
        "built without --cfg tokio_unstable (a RUSTFLAGS variable replaces .cargo/config.toml's): \
         tokio's own choices are then not seeded, and a seed cannot replay"
    );
    let options = Options::default();
    for seed in 0..REPLAYED_SEEDS {
        let a = run(seed, &options).unwrap_or_else(|f| panic!("{f}"));
        let b = run(seed, &options).unwrap_or_else(|f| panic!("{f}"));
        if a.digest != b.digest {
            let first = a.trace.iter().zip(&b.trace).position(|(x, y)| x != y);
            let i = first.unwrap_or(0);
            for k in i.saturating_sub(12)..(i + 4).min(a.trace.len()).min(b.trace.len()) {
                eprintln!("{:<50} | {}", a.trace[k], b.trace[k]);
            }
            panic!(
                "seed {seed} ran two worlds; first difference at line {first:?}:\n{:?}\n{:?}",
                first.map(|i| &a.trace[i]),
                first.map(|i| &b.trace[i])
            );
        }
    }
}

/// Seeds within which each reintroduced bug must be found.
const SEEDS_TO_FIND_MAX: u64 = 50;

#[test]
fn reintroduced_bugs_are_found() {
    use rzk_recipes::bugs::Bug;
    // One bug so far; each one brought back gets a line here.
    #[allow(clippy::single_element_loop)]
    for bug in [Bug::LeaseTrustsRequestedTimeout] {
        let options = Options { bug: Some(bug), ..Options::default() };
        let found = (0..SEEDS_TO_FIND_MAX).find_map(|seed| run(seed, &options).err());
        match found {
            Some(f) => println!("{bug:?}: found by seed {}: {}", f.seed, f.what),
            None => panic!("{bug:?} went unnoticed for {SEEDS_TO_FIND_MAX} seeds"),
        }
    }
}
