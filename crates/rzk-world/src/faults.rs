//! The faults a world draws from its seed, and which of them a run applies.
//!
//! A fault is drawn before it is applied, always with the same draws from the seed's
//! generator, so that leaving a fault out (the shrinker, a short replay) leaves every later
//! draw as it was: the same schedule, less one fault.

use std::collections::BTreeSet;

use rzk_sim::Rng;

/// How often (percent of faults) each kind is drawn: the connection cut, black-holed for up
/// to twice the session timeout, delayed by up to half of it, the server crashed and
/// recovered, the server stalled for up to twice the session timeout, and a client process
/// crashed and restarted (the rest).
const CUT_PERCENT: u64 = 25;
const BLACK_HOLE_PERCENT: u64 = 25;
const DELAY_PERCENT: u64 = 20;
const SERVER_CRASH_PERCENT: u64 = 8;
const SERVER_STALL_PERCENT: u64 = 6;

/// How far the server's clock runs from the processes' (which share tokio's), at most, in
/// parts per thousand either way: within the bound the lease assumes. A lease's deadline is
/// `last_ack_sent + T − safety_margin` on the holder's clock, no later than the server's
/// earliest expiry `last_ack_sent + T` on the server's while the server's clock runs at most
/// `safety_margin / (T − safety_margin)` fast: 200 ms / 1,800 ms, 11 %, for the longest
/// timeout a world's server grants (2 s), more for shorter ones. (A holder's loss signal
/// fires a stop budget earlier still; the world finds a server clock 50 % fast.)
pub const CLOCK_DRIFT_PERMILLE_MAX: i64 = 100;
/// Mixed into the world's seed for the server's clock rate, drawn apart from the schedule so
/// that a world's faults do not move with it.
const CLOCK_SEED_SALT: u64 = 0xc10c_c10c;

/// One fault, as drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Process `p`'s connection is cut.
    Cut { p: usize },
    /// Process `p` is cut off from the server (nothing passes, nothing closes) for `ms`.
    BlackHole { p: usize, ms: u64 },
    /// Process `p`'s links deliver each frame `ms` late.
    Delay { p: usize, ms: u64 },
    /// The server crashes and serves again from its disk after `ms`.
    ServerCrash { ms: u64 },
    /// Process `p` crashes and starts again with a new session.
    ProcessCrash { p: usize },
    /// The whole server stops for `ms`, its clock running on; it resumes with its timer
    /// first when `ticks_first`.
    ServerStall { ms: u64, ticks_first: bool },
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Cut { p } => write!(f, "cut p{p}"),
            Fault::BlackHole { p, ms } => write!(f, "black-hole p{p} for {ms} ms"),
            Fault::Delay { p, ms } => write!(f, "delay p{p} by {ms} ms"),
            Fault::ServerCrash { ms } => write!(f, "server crash, {ms} ms to recover"),
            Fault::ProcessCrash { p } => write!(f, "p{p} crashes and restarts"),
            Fault::ServerStall { ms, ticks_first } => {
                let first = if *ticks_first { "its timer" } else { "its connections" };
                write!(f, "server stalls for {ms} ms, then runs {first} first")
            }
        }
    }
}

/// Draws the next fault among `processes` processes whose session timeout is `timeout_ms`.
pub(crate) fn draw(rng: &mut Rng, processes: usize, timeout_ms: u64) -> Fault {
    let p = rng.below(processes as u64) as usize;
    let kind = rng.below(100);
    if kind < CUT_PERCENT {
        Fault::Cut { p }
    } else if kind < CUT_PERCENT + BLACK_HOLE_PERCENT {
        Fault::BlackHole { p, ms: rng.below(2 * timeout_ms) }
    } else if kind < CUT_PERCENT + BLACK_HOLE_PERCENT + DELAY_PERCENT {
        Fault::Delay { p, ms: rng.below(timeout_ms / 2) }
    } else if kind < CUT_PERCENT + BLACK_HOLE_PERCENT + DELAY_PERCENT + SERVER_CRASH_PERCENT {
        Fault::ServerCrash { ms: rng.below(rzk_sim::machine::RECOVERY_TO_SERVING_MS_MAX + 1) }
    } else if kind
        < CUT_PERCENT
            + BLACK_HOLE_PERCENT
            + DELAY_PERCENT
            + SERVER_CRASH_PERCENT
            + SERVER_STALL_PERCENT
    {
        Fault::ServerStall { ms: rng.below(2 * timeout_ms), ticks_first: rng.percent(50) }
    } else {
        Fault::ProcessCrash { p }
    }
}

/// The server's clock rate against the processes' for the world of `seed`, in parts per
/// thousand, within [`CLOCK_DRIFT_PERMILLE_MAX`] either way.
pub(crate) fn clock_permille(seed: u64) -> i64 {
    let span = 2 * CLOCK_DRIFT_PERMILLE_MAX as u64 + 1;
    Rng::new(seed ^ CLOCK_SEED_SALT).below(span) as i64 - CLOCK_DRIFT_PERMILLE_MAX
}

/// Which drawn faults a run applies, by their index in the draw order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Kept {
    /// Every fault drawn: a normal run.
    #[default]
    All,
    /// Only these; the others are drawn and left out.
    Only(BTreeSet<usize>),
}

impl Kept {
    /// Whether the fault of index `i` is applied.
    pub fn keeps(&self, i: usize) -> bool {
        match self {
            Kept::All => true,
            Kept::Only(set) => set.contains(&i),
        }
    }

    /// The first `n` faults.
    pub fn first(n: usize) -> Kept {
        Kept::Only((0..n).collect())
    }

    /// `RZK_WORLD_KEEP`'s form: the kept indices, comma-separated.
    pub fn parse(text: &str) -> Result<Kept, String> {
        text.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().parse::<usize>().map_err(|_| format!("{s:?}: not a fault index")))
            .collect::<Result<BTreeSet<usize>, String>>()
            .map(Kept::Only)
    }
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kept::All => write!(f, "all"),
            Kept::Only(set) => {
                let list: Vec<String> = set.iter().map(usize::to_string).collect();
                write!(f, "{}", list.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draws_cover_every_kind() {
        let mut rng = Rng::new(7);
        let mut kinds: Vec<_> =
            (0..200).map(|_| std::mem::discriminant(&draw(&mut rng, 7, 2000))).collect();
        kinds.dedup();
        let distinct: std::collections::HashSet<_> = kinds.into_iter().collect();
        assert_eq!(distinct.len(), 6);
        assert!((0..100).all(|s| clock_permille(s).abs() <= CLOCK_DRIFT_PERMILLE_MAX));
    }

    #[test]
    fn kept_lists_round_trip() {
        let k = Kept::parse("3, 1,12").unwrap();
        assert!(k.keeps(1) && k.keeps(3) && k.keeps(12) && !k.keeps(2));
        assert_eq!(Kept::parse(&k.to_string()).unwrap(), k);
        assert!(Kept::parse("1,x").is_err());
        assert!(Kept::All.keeps(99) && !Kept::first(2).keeps(2));
    }
}
