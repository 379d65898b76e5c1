//! The seeded simulation: many seeds, each a different history of clients, faults, crashes
//! and recoveries. A failure prints its seed; `RZK_SIM_SEED=<seed>` replays just that one.
//! `RZK_SIM_SEEDS` sets how many seeds run (CI runs the default).

use rzk_sim::{Faults, Sim};

fn seeds() -> Vec<u64> {
    if let Ok(s) = std::env::var("RZK_SIM_SEED") {
        return vec![s.parse().expect("RZK_SIM_SEED is a number")];
    }
    let n: u64 = std::env::var("RZK_SIM_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    (1..=n).collect()
}

#[test]
fn invariants_hold_under_faults_and_the_system_heals() {
    let mut total = rzk_sim::SimReport::default();
    for seed in seeds() {
        let mut sim = Sim::new(seed, 6, Faults::default_mix());
        if let Err(e) = sim.run(1500).and_then(|_| sim.heal(2000)) {
            panic!("{e}\nreplay with RZK_SIM_SEED={seed}");
        }
        let r = sim.report();
        total.txns += r.txns;
        total.acks += r.acks;
        total.crashes += r.crashes;
        total.snapshots += r.snapshots;
        total.expirations += r.expirations;
        total.drops += r.drops;
        total.events += r.events;
        total.spares += r.spares;
    }
    println!("{total:?}");
    if std::env::var("RZK_SIM_SEED").is_err() {
        // The faults really happened, in numbers.
        assert!(total.crashes >= 20, "{total:?}");
        assert!(total.snapshots >= 10, "{total:?}");
        assert!(total.expirations >= 5, "{total:?}");
        assert!(total.drops >= 20, "{total:?}");
        assert!(total.events >= 100, "{total:?}");
        assert!(total.spares >= 10, "{total:?}");
        assert!(total.acks >= 1000, "{total:?}");
    }
}

#[test]
fn a_seed_replays_identically() {
    let run = |seed| {
        let mut sim = Sim::new(seed, 4, Faults::default_mix());
        sim.run(800).unwrap();
        format!("{:?}", sim.report())
    };
    assert_eq!(run(42), run(42));
}
