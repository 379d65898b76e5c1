//! The world under many seeds: every run must keep every invariant, and a seed must replay
//! the same world.
//!
//! - `RZK_WORLD_SEED=S`: run that one seed (a failure's replay), printing its trace;
//! - `RZK_WORLD_SEEDS=N`: how many seeds the sweep runs (default [`SEEDS_DEFAULT`]);
//! - `RZK_WORLD_FIRST=F`: the sweep's first seed (default 0), for soak runs elsewhere;
//! - `RZK_WORLD_BUG`, `RZK_WORLD_KEEP`, `RZK_WORLD_FAULTY_S`, `RZK_WORLD_CALM_S`,
//!   `RZK_WORLD_MIX`, `RZK_WORLD_CLOCK_PERMILLE`: the world's options (`Options::from_env`), as a failure prints them.

use rzk_world::{run, shrink, sweep, Failure, Kept, Mix, Options, Recipe};

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
    let options = Options::from_env().unwrap_or_else(|e| panic!("{e}"));
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
    let t = match sweep(first, n, 1, &options) {
        Ok(t) => t,
        Err(f) => match shrink(f.seed, &options) {
            Some(s) => panic!("{}\n{s}", f.what),
            None => panic!("{f}\n(it did not fail again when shrinking)"),
        },
    };
    println!(
        "{n} seeds in {:?}: {} holds, {} guarded writes, {} faults ({} server crashes)",
        t.elapsed, t.holds, t.writes, t.faults, t.crashes
    );
    assert!(t.holds > 10 * n, "the worlds did too little: {} holds", t.holds);
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

/// Seeds within which each reintroduced bug must be found (but one, which needs a rarer
/// schedule, in a world cheaper per seed); the seed that finds each today is in
/// tests/README.md.
const SEEDS_TO_FIND_MAX: u64 = 50;

/// Finds `bug` in the world `world` within [`SEEDS_TO_FIND_MAX`] seeds, checks that the seed
/// replays the failure, and with `shrunk` that fewer faults still break it.
fn found(bug: rzk_recipes::bugs::Bug, world: Options, shrunk: bool) {
    found_within(bug, world, shrunk, SEEDS_TO_FIND_MAX);
}

fn found_within(bug: rzk_recipes::bugs::Bug, world: Options, shrunk: bool, seeds: u64) {
    let options = Options { bug: Some(bug), ..world };
    let found = (0..seeds).find_map(|seed| run(seed, &options).err());
    let Some(f) = found else { panic!("{bug:?} went unnoticed for {seeds} seeds") };
    let before = applied(&f);
    if !shrunk {
        let again = run(f.seed, &options).expect_err("a found failure replays");
        assert_eq!(again.trace, f.trace, "seed {} replayed another world", f.seed);
        println!("{bug:?}: found by seed {} ({before} faults): {}", f.seed, f.what);
        return;
    }
    let s = shrink(f.seed, &options).expect("a found failure replays");
    println!(
        "{bug:?}: found by seed {} ({before} faults), shrunk to {} in {} runs: {}",
        f.seed, s.faults, s.runs, s.failure.what
    );
    assert!(s.faults < before, "nothing left out of {before} faults");
    assert_eq!(applied(&s.failure), s.faults);
    let again = Options { kept: s.failure.options.kept.clone(), ..options };
    assert!(run(f.seed, &again).is_err(), "the shrunk world passed when replayed");
}

#[test]
fn a_lease_that_trusts_the_requested_timeout_is_found_and_shrunk() {
    use rzk_recipes::bugs::Bug;
    found(Bug::LeaseTrustsRequestedTimeout, Options::default(), true);
    // The latch's leaders trust the same lease: a world of leaders alone finds it too.
    let latch_only = Options { mix: Mix::only(Recipe::Latch, 3), ..Options::default() };
    found(Bug::LeaseTrustsRequestedTimeout, latch_only, true);
}

#[test]
fn a_guarded_write_kept_for_a_reconnect_is_found() {
    found(rzk_recipes::bugs::Bug::GuardedWriteKeptForReconnect, Options::default(), false);
}

#[test]
fn a_resign_answered_before_the_delete_is_found_and_shrunk() {
    found(rzk_recipes::bugs::Bug::ResignAnsweredBeforeDelete, Options::default(), true);
}

#[test]
fn a_lock_on_an_earlier_sessions_node_is_found() {
    found(rzk_recipes::bugs::Bug::LockOnEarlierSessionNode, Options::default(), false);
}

#[test]
fn a_given_up_acquire_that_leaves_its_node_is_found() {
    found(rzk_recipes::bugs::Bug::WithdrawnNodeKept, Options::default(), false);
}

#[test]
fn a_reconnect_storm_is_found() {
    found(rzk_recipes::bugs::Bug::ReconnectStorm, Options::default(), false);
}

/// The faults a failed run applied, from its trace.
fn applied(f: &Failure) -> usize {
    f.trace.iter().filter(|l| l.contains(" fault ") && !l.contains("left out")).count()
}

#[test]
fn a_left_out_fault_leaves_the_rest_of_the_schedule() {
    let faults = |o: &rzk_world::Outcome| -> Vec<String> {
        let lines = o.trace.iter().filter_map(|l| l.split_once(" fault ").map(|(_, f)| f));
        lines.map(|f| f.replace(" left out:", ":")).collect()
    };
    let all = run(3, &Options::default()).unwrap_or_else(|f| panic!("{f}"));
    let some = Options { kept: Kept::Only([0, 1, 3].into()), ..Options::default() };
    let fewer = run(3, &some).unwrap_or_else(|f| panic!("{f}"));
    let (a, b) = (faults(&all), faults(&fewer));
    assert!(a.len() > 10, "seed 3 draws faults: {a:?}");
    // Every fault is drawn, applied or not, so the schedule is the same fault for fault.
    assert_eq!(a, b);
    assert!(fewer.trace.iter().any(|l| l.contains("fault 2 left out")), "{:?}", fewer.trace);
    assert_eq!(fewer.faults, 3);
}

#[test]
fn a_registration_that_keeps_its_first_data_is_found() {
    found(rzk_recipes::bugs::Bug::RegistrationKeepsFirstData, Options::default(), false);
}

#[test]
fn a_cache_that_keeps_vanished_children_is_found() {
    found(rzk_recipes::bugs::Bug::CacheKeepsVanishedChildren, Options::default(), false);
}

#[test]
fn a_server_clock_faster_than_the_lease_allows_is_found() {
    // Every other test's world draws its server's clock within the lease's bound, and keeps
    // the invariants; a server whose clock runs 50 % fast expires a holder's session before
    // the holder's loss signal fires, and another process takes over while it still holds.
    let fast = Options { clock_permille: Some(500), ..Options::default() };
    let found = (0..SEEDS_TO_FIND_MAX).find_map(|seed| run(seed, &fast).err());
    let f = found.unwrap_or_else(|| panic!("a clock 50 % fast went unnoticed for 50 seeds"));
    assert!(f.what.contains("held"), "seed {} failed otherwise: {}", f.seed, f.what);
    println!("a server clock 50 % fast: found by seed {}: {}", f.seed, f.what);
}
