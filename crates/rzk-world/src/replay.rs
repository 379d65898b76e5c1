//! A world's options as environment variables, both ways: a failure prints the variables
//! that replay it, and the replay test reads them. The names live here only.

use std::time::Duration;

use rzk_recipes::bugs::Bug;

use crate::faults::Kept;
use crate::mix::Mix;
use crate::world::Options;

/// The bugs a run can bring back, by the name `RZK_WORLD_BUG` and `--bug` take.
const BUGS: &[(&str, Bug)] = &[
    ("lease", Bug::LeaseTrustsRequestedTimeout),
    ("kept-write", Bug::GuardedWriteKeptForReconnect),
    ("resign", Bug::ResignAnsweredBeforeDelete),
    ("earlier-session", Bug::LockOnEarlierSessionNode),
    ("storm", Bug::ReconnectStorm),
    ("lease-release", Bug::SemaphoreReleaseBeforeDelete),
    ("withdrawn-node", Bug::WithdrawnNodeKept),
    ("first-data", Bug::RegistrationKeepsFirstData),
    ("cache-vanished", Bug::CacheKeepsVanishedChildren),
];

/// The bug called `name`.
///
/// # Errors
/// An unknown name, with the known ones.
pub fn bug_named(name: &str) -> Result<Bug, String> {
    BUGS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b).ok_or_else(|| {
        let known: Vec<&str> = BUGS.iter().map(|(n, _)| *n).collect();
        format!("{name}: the known bugs are: {}", known.join(", "))
    })
}

fn bug_name(bug: Bug) -> Option<&'static str> {
    BUGS.iter().find(|(_, b)| *b == bug).map(|(n, _)| *n)
}

fn number(name: &str, v: &str) -> Result<u64, String> {
    v.parse().map_err(|_| format!("{name}={v}: not a number"))
}

impl Options {
    /// The default options, changed by `RZK_WORLD_BUG`, `RZK_WORLD_FAULTY_S`,
    /// `RZK_WORLD_CALM_S`, `RZK_WORLD_MIX` (the processes of each recipe: `mutex=4,latch=3`, or
    /// `drawn`, the default), `RZK_WORLD_CLOCK_PERMILLE` (the server's clock rate: `+100` is
    /// 10 % fast) and `RZK_WORLD_KEEP` (the faults applied: `3,8`).
    ///
    /// # Errors
    /// A variable that does not parse, named.
    pub fn from_env() -> Result<Options, String> {
        let var = |name: &str| std::env::var(name).ok();
        let mut o = Options::default();
        if let Some(b) = var("RZK_WORLD_BUG") {
            o.bug = Some(bug_named(&b).map_err(|e| format!("RZK_WORLD_BUG={e}"))?);
        }
        if let Some(s) = var("RZK_WORLD_FAULTY_S") {
            o.faulty = Duration::from_secs(number("RZK_WORLD_FAULTY_S", &s)?);
        }
        if let Some(s) = var("RZK_WORLD_CALM_S") {
            o.calm = Duration::from_secs(number("RZK_WORLD_CALM_S", &s)?);
        }
        if let Some(mix) = var("RZK_WORLD_MIX") {
            o.mix = Mix::parse(&mix).map_err(|e| format!("RZK_WORLD_MIX={mix}: {e}"))?;
        }
        if let Some(c) = var("RZK_WORLD_CLOCK_PERMILLE") {
            let rate =
                c.parse().map_err(|_| format!("RZK_WORLD_CLOCK_PERMILLE={c}: not a number"))?;
            o.clock_permille = Some(rate);
        }
        if let Some(keep) = var("RZK_WORLD_KEEP") {
            o.kept = Kept::parse(&keep).map_err(|e| format!("RZK_WORLD_KEEP: {e}"))?;
        }
        Ok(o)
    }

    /// The variables [`Options::from_env`] reads back as these options, for the ones that
    /// differ from the defaults: `RZK_WORLD_BUG=lease RZK_WORLD_KEEP=3,8 ` (each followed by a
    /// space), or nothing.
    pub fn replay_env(&self) -> String {
        let default = Options::default();
        let mut env = String::new();
        if let Some(name) = self.bug.and_then(bug_name) {
            env.push_str(&format!("RZK_WORLD_BUG={name} "));
        }
        if self.kept != Kept::All {
            env.push_str(&format!("RZK_WORLD_KEEP={} ", self.kept));
        }
        if self.faulty != default.faulty || self.calm != default.calm {
            let (faulty, calm) = (self.faulty.as_secs(), self.calm.as_secs());
            env.push_str(&format!("RZK_WORLD_FAULTY_S={faulty} RZK_WORLD_CALM_S={calm} "));
        }
        if self.mix != default.mix {
            env.push_str(&format!("RZK_WORLD_MIX={} ", self.mix));
        }
        if let Some(rate) = self.clock_permille {
            env.push_str(&format!("RZK_WORLD_CLOCK_PERMILLE={rate} "));
        }
        env
    }
}
