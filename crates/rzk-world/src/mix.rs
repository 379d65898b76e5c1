//! What runs in a world: the recipes, and how many client processes run each. By default the
//! seed draws the mix, so that across seeds every recipe meets every other under faults while
//! one world costs what about ten processes cost.

use rzk_sim::Rng;

/// A recipe the world's processes run, each on a path of its own under `/world`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Recipe {
    /// InterProcessMutex at `/world/lock`: one holder, who makes guarded writes.
    Mutex,
    /// InterProcessSemaphore at `/world/sem`: [`SEMAPHORE_LEASES`] holders.
    Semaphore,
    /// LeaderLatch at `/world/latch`: one leader, who makes guarded writes.
    Latch,
    /// RaceElection at `/world/race`: one leader, who makes guarded writes.
    Race,
    /// InterProcessReadWriteLock at `/world/rw`: readers share it, a writer excludes everyone
    /// and makes guarded writes.
    RwLock,
    /// DistributedAtomicLong at `/world/counter`: increments.
    Counter,
    /// SimpleDistributedQueue at `/world/queue`: every process offers items and takes them.
    Queue,
    /// TreeCache of `/world/config`: every process writes keys there while the faults last
    /// and keeps a cache of the whole subtree, which must equal the server's once they stop.
    Cache,
    /// curator-x-discovery's ServiceDiscovery at `/world/services`: every process registers
    /// an instance, updates and re-registers it while the faults last, and keeps a
    /// ServiceCache of the service; once they stop, every instance must be registered with
    /// its latest data and every cache must equal the registry.
    Discovery,
}

/// Leases of the world's semaphore.
pub const SEMAPHORE_LEASES: u32 = 2;

impl Recipe {
    /// Every recipe, in the order a world starts their processes.
    pub const ALL: [Recipe; 9] = [
        Recipe::Mutex,
        Recipe::Semaphore,
        Recipe::Latch,
        Recipe::Race,
        Recipe::RwLock,
        Recipe::Counter,
        Recipe::Queue,
        Recipe::Cache,
        Recipe::Discovery,
    ];

    /// Its name in `RZK_WORLD_MIX`.
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::Semaphore => "semaphore",
            Recipe::Latch => "latch",
            Recipe::Race => "race",
            Recipe::RwLock => "rwlock",
            Recipe::Counter => "counter",
            Recipe::Queue => "queue",
            Recipe::Cache => "cache",
            Recipe::Discovery => "discovery",
        }
    }

    /// The recipe called `name`.
    pub fn named(name: &str) -> Option<Recipe> {
        Recipe::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Whether its progress is convergence to the server's state (checked by the world in
    /// the calm), not holds or answers counted by the recorder.
    pub fn converges(self) -> bool {
        matches!(self, Recipe::Cache | Recipe::Discovery)
    }

    /// How many may hold it at once, for the recipes whose holds are terms (a read-write
    /// lock's writers; its readers share).
    pub fn holders(self) -> usize {
        match self {
            Recipe::Semaphore => SEMAPHORE_LEASES as usize,
            _ => 1,
        }
    }

    /// The most processes a drawn mix gives it: enough to contend, few enough that a world
    /// of all of them stays cheap.
    fn share(self) -> u64 {
        match self {
            Recipe::Mutex => 4,
            Recipe::Counter | Recipe::Cache | Recipe::Discovery => 2,
            _ => 3,
        }
    }
}

/// How many processes run each recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mix {
    /// Drawn from the seed: each recipe 0 to its share of processes, at least one process in
    /// all.
    Drawn,
    /// These counts, in this order.
    Fixed(Vec<(Recipe, usize)>),
}

impl Mix {
    /// `n` processes of `recipe` alone.
    pub fn only(recipe: Recipe, n: usize) -> Mix {
        Mix::Fixed(vec![(recipe, n)])
    }

    /// The world's counts, drawn from `rng` for [`Mix::Drawn`].
    pub(crate) fn counts(&self, rng: &mut Rng) -> Vec<(Recipe, usize)> {
        match self {
            Mix::Fixed(counts) => counts.clone(),
            Mix::Drawn => {
                let mut counts: Vec<(Recipe, usize)> =
                    Recipe::ALL.iter().map(|&r| (r, rng.below(r.share() + 1) as usize)).collect();
                if counts.iter().all(|&(_, n)| n == 0) {
                    counts[0].1 = 1;
                }
                counts
            }
        }
    }

    /// Parses `mutex=4,latch=3` (or `drawn`).
    ///
    /// # Errors
    /// An unknown recipe or a count that is not a number, named.
    pub fn parse(text: &str) -> Result<Mix, String> {
        if text == "drawn" {
            return Ok(Mix::Drawn);
        }
        let pair = |p: &str| -> Result<(Recipe, usize), String> {
            let (name, n) = p.split_once('=').ok_or(format!("{p}: not recipe=count"))?;
            let recipe = Recipe::named(name).ok_or_else(|| {
                let known: Vec<&str> = Recipe::ALL.iter().map(|r| r.name()).collect();
                format!("{name}: the recipes are {}", known.join(", "))
            })?;
            Ok((recipe, n.parse().map_err(|_| format!("{p}: {n} is not a number"))?))
        };
        text.split(',').map(pair).collect::<Result<Vec<_>, _>>().map(Mix::Fixed)
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mix::Drawn => write!(f, "drawn"),
            Mix::Fixed(counts) => {
                let pairs: Vec<String> =
                    counts.iter().map(|(r, n)| format!("{}={n}", r.name())).collect();
                write!(f, "{}", pairs.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_round_trips_and_a_drawn_one_has_a_process() {
        let m = Mix::parse("mutex=4,queue=2").unwrap();
        assert_eq!(m, Mix::Fixed(vec![(Recipe::Mutex, 4), (Recipe::Queue, 2)]));
        assert_eq!(Mix::parse(&m.to_string()).unwrap(), m);
        assert_eq!(Mix::parse("drawn").unwrap(), Mix::Drawn);
        assert!(Mix::parse("lock=1").unwrap_err().contains("the recipes are"));
        for seed in 0..200 {
            let counts = Mix::Drawn.counts(&mut Rng::new(seed));
            assert!(counts.iter().map(|(_, n)| n).sum::<usize>() > 0);
        }
    }
}
