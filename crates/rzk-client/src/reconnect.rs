//! How the session task picks a server and paces its attempts, with no I/O: the host order,
//! the per-attempt timeout, and the pauses between attempts. Randomness comes from one
//! seedable generator, so a simulation replays the same choices.
//!
//! The rules follow the Java client's `StaticHostProvider` and `ClientCnxn`, where they help
//! an ensemble, and improve on them where the Java client is slow:
//! - the host list is shuffled once per client, so the clients of a dead member spread over
//!   the survivors instead of all moving to the next one in the string;
//! - every reconnect starts after a random pause of up to [`FIRST_PAUSE_MAX`] (Java: up to
//!   1 s), so they do not all arrive in the same millisecond;
//! - one attempt may take `T / n` at most (Java's `connectTimeout`), capped by the connection
//!   timeout, so a black-holed member costs no more than its share of the session timeout;
//! - after a round in which every host failed, and after a connection that died within
//!   [`HEALTHY_AFTER`] of its handshake (a server that closes at once, as an enforcing one
//!   does), the pause doubles from [`BACKOFF_MIN`] to [`BACKOFF_MAX`], each drawn from its
//!   upper half: a failing set-up retries a few times a second, not fifty.

use std::time::Duration;

/// The longest random pause before the first attempt of a reconnect; it is also capped at a
/// tenth of the session timeout, so a short session keeps its time for the attempts.
pub(crate) const FIRST_PAUSE_MAX: Duration = Duration::from_millis(500);
/// The first back-off pause; it doubles up to [`BACKOFF_MAX`].
pub(crate) const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// The longest back-off pause.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// A connection that served at least this long was healthy: the back-off starts over.
pub(crate) const HEALTHY_AFTER: Duration = Duration::from_secs(1);

/// The servers of a connect string, in the order this client tries them.
#[derive(Debug)]
pub(crate) struct Hosts {
    hosts: Vec<String>,
    next: usize,
}

impl Hosts {
    /// `hosts` shuffled with `rng`.
    pub fn shuffled(mut hosts: Vec<String>, rng: &mut fastrand::Rng) -> Hosts {
        rng.shuffle(&mut hosts);
        Hosts { hosts, next: 0 }
    }

    /// The host to try next; the list is walked round-robin.
    pub fn next(&mut self) -> &str {
        let i = self.next % self.hosts.len();
        self.next = self.next.wrapping_add(1);
        &self.hosts[i]
    }

    /// How many hosts there are (at least one: the connect string was checked).
    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// Makes `host` the next one [`Hosts::next`] returns (a read-write server found while the
    /// session is on a read-only one); the walk goes on from there.
    pub fn prefer(&mut self, host: &str) {
        if let Some(i) = self.hosts.iter().position(|h| h == host) {
            self.next = i;
        }
    }
}

/// How long one connection attempt may take: the session timeout shared out over the hosts,
/// and never more than the connection timeout.
pub(crate) fn attempt_timeout(session: Duration, connection: Duration, hosts: usize) -> Duration {
    let share = session / u32::try_from(hosts.max(1)).unwrap_or(u32::MAX);
    share.min(connection)
}

/// The pauses between attempts.
#[derive(Debug)]
pub(crate) struct Backoff {
    rng: fastrand::Rng,
    next: Duration,
}

impl Backoff {
    pub fn new(rng: fastrand::Rng) -> Backoff {
        Backoff { rng, next: BACKOFF_MIN }
    }

    /// The pause before a reconnect's first attempt. A connection that served for
    /// `served` or longer resets the back-off and gets a short random pause; one that died
    /// sooner counts as one more failure.
    pub fn before_reconnect(&mut self, served: Duration, session: Duration) -> Duration {
        if crate::bugs::reconnect_storm() {
            return Duration::ZERO;
        }
        if served < HEALTHY_AFTER {
            return self.after_failure();
        }
        self.next = BACKOFF_MIN;
        let max = FIRST_PAUSE_MAX.min(session / 10);
        self.uniform(Duration::ZERO, max)
    }

    /// The pause after a round in which every host failed: the current back-off, drawn from
    /// its upper half; the next one is twice as long, up to [`BACKOFF_MAX`].
    pub fn after_failure(&mut self) -> Duration {
        if crate::bugs::reconnect_storm() {
            return Duration::ZERO;
        }
        let cur = self.next;
        self.next = (cur * 2).min(BACKOFF_MAX);
        self.uniform(cur / 2, cur)
    }

    fn uniform(&mut self, lo: Duration, hi: Duration) -> Duration {
        let (lo_us, hi_us) = (micros(lo), micros(hi));
        if hi_us <= lo_us {
            return lo;
        }
        Duration::from_micros(self.rng.u64(lo_us..=hi_us))
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_is_tried_once_per_round_from_a_shuffled_start() {
        let hosts: Vec<String> = (0..5).map(|i| format!("h{i}:2181")).collect();
        let mut firsts = std::collections::HashSet::new();
        for seed in 0..64 {
            let mut h = Hosts::shuffled(hosts.clone(), &mut fastrand::Rng::with_seed(seed));
            let mut round: Vec<String> = (0..5).map(|_| h.next().to_owned()).collect();
            firsts.insert(round[0].clone());
            let again: Vec<String> = (0..5).map(|_| h.next().to_owned()).collect();
            assert_eq!(round, again, "round-robin after the shuffle");
            round.sort();
            assert_eq!(round, hosts, "each host once per round");
        }
        assert_eq!(firsts.len(), 5, "every host comes first for some client");
    }

    #[test]
    fn an_attempt_gets_its_share_of_the_session() {
        let t = Duration::from_secs(10);
        assert_eq!(attempt_timeout(t, t * 2 / 5, 1), Duration::from_secs(4));
        assert_eq!(attempt_timeout(t, t * 2 / 5, 5), Duration::from_secs(2));
        assert_eq!(attempt_timeout(t, Duration::from_secs(1), 3), Duration::from_secs(1));
    }

    #[test]
    fn the_back_off_doubles_within_its_bounds_and_resets_after_a_healthy_connection() {
        let t = Duration::from_secs(10);
        let mut b = Backoff::new(fastrand::Rng::with_seed(7));
        let mut prev_hi = Duration::ZERO;
        for _ in 0..10 {
            let hi = b.next;
            let p = b.after_failure();
            assert!(p >= hi / 2 && p <= hi && hi <= BACKOFF_MAX, "{p:?} within {hi:?}");
            assert!(hi >= prev_hi);
            prev_hi = hi;
        }
        assert_eq!(b.next, BACKOFF_MAX);
        // A connection closed right after its handshake is one more failure, not a reset.
        let p = b.before_reconnect(Duration::from_millis(10), t);
        assert!(p >= BACKOFF_MAX / 2, "{p:?}");
        let p = b.before_reconnect(HEALTHY_AFTER, t);
        assert!(p <= FIRST_PAUSE_MAX, "{p:?}");
        assert_eq!(b.next, BACKOFF_MIN);
        let short = Duration::from_millis(800);
        assert!(b.before_reconnect(HEALTHY_AFTER, short) <= short / 10);
    }

    #[test]
    fn first_pauses_spread_over_their_range() {
        let mut b = Backoff::new(fastrand::Rng::with_seed(1));
        let t = Duration::from_secs(10);
        let pauses: Vec<Duration> =
            (0..200).map(|_| b.before_reconnect(HEALTHY_AFTER, t)).collect();
        let below = pauses.iter().filter(|p| **p < FIRST_PAUSE_MAX / 2).count();
        assert!((60..=140).contains(&below), "{below} of 200 in the lower half");
    }
}
