//! Where the recipes' random ids come from (the UUID of a protected node name, a service
//! instance's id): the operating system's randomness, or, on a thread that asked for it with
//! [`seed_node_ids`], a generator seeded for a deterministic simulation, so that a seeded
//! world (crates/rzk-world) creates the same node names each time it runs.

use std::cell::RefCell;

thread_local! {
    static SEEDED: RefCell<Option<fastrand::Rng>> = const { RefCell::new(None) };
}

/// Makes the ids the recipes generate on this thread come from `seed` instead of the
/// operating system's randomness (`None`: from the operating system again). For
/// deterministic simulation only: ids drawn this way are unique only among those of the
/// same seed.
pub fn seed_node_ids(seed: Option<u64>) {
    SEEDED.with(|s| *s.borrow_mut() = seed.map(fastrand::Rng::with_seed));
}

/// A random (version 4) UUID.
pub(crate) fn new_uuid() -> uuid::Uuid {
    let seeded = SEEDED.with(|s| {
        s.borrow_mut().as_mut().map(|rng| {
            let mut bytes = [0u8; 16];
            rng.fill(&mut bytes);
            uuid::Builder::from_random_bytes(bytes).into_uuid()
        })
    });
    seeded.unwrap_or_else(uuid::Uuid::new_v4)
}
