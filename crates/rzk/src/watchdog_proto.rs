//! The messages between a command's owner (`rzk elect`) and its watchdog (`rzk __watchdog`),
//! and the clock their deadlines are written in.
//!
//! Every message is [`MESSAGE_LEN`] bytes: a kind byte and a little-endian `u64`. A kind that
//! the reader does not know is malformed, so a change of meaning takes a new kind byte and an
//! old reader refuses it instead of misreading it; the watchdog treats a malformed message
//! like a closed channel and stops the command.
//!
//! Deadlines are absolute nanoseconds of `CLOCK_MONOTONIC`, which every process on one host
//! shares. A relative deadline would be wrong by however long the message waited: an owner
//! frozen between computing "5 s from now" and writing it would extend the lease by the
//! length of its freeze.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use rustix::time::{clock_gettime, ClockId};

/// Size of every message on the channel, in bytes.
pub(crate) const MESSAGE_LEN: usize = 9;

const RENEW: u8 = 1;
const STOP: u8 = 2;
const STARTED: u8 = 3;
const SPAWN_FAILED: u8 = 4;

/// From the owner to the watchdog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToWatchdog {
    /// Stop the command at this `CLOCK_MONOTONIC` time (ns) unless renewed before it.
    Renew { stop_at_ns: u64 },
    /// Stop the command now.
    Stop,
}

/// From the watchdog to the owner, once, after the first [`ToWatchdog::Renew`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FromWatchdog {
    /// The command runs as this process (the leader of its own process group).
    Started { pid: u32 },
    /// The command could not be started; the OS error number.
    SpawnFailed { errno: i32 },
}

fn frame(kind: u8, value: u64) -> [u8; MESSAGE_LEN] {
    let mut m = [0; MESSAGE_LEN];
    m[0] = kind;
    m[1..].copy_from_slice(&value.to_le_bytes());
    m
}

fn unframe(m: &[u8; MESSAGE_LEN]) -> (u8, u64) {
    let mut v = [0; 8];
    v.copy_from_slice(&m[1..]);
    (m[0], u64::from_le_bytes(v))
}

impl ToWatchdog {
    pub(crate) fn encode(self) -> [u8; MESSAGE_LEN] {
        match self {
            ToWatchdog::Renew { stop_at_ns } => frame(RENEW, stop_at_ns),
            ToWatchdog::Stop => frame(STOP, 0),
        }
    }

    /// `None` for a malformed message.
    pub(crate) fn decode(m: &[u8; MESSAGE_LEN]) -> Option<ToWatchdog> {
        match unframe(m) {
            (RENEW, stop_at_ns) => Some(ToWatchdog::Renew { stop_at_ns }),
            (STOP, 0) => Some(ToWatchdog::Stop),
            _ => None,
        }
    }
}

impl FromWatchdog {
    pub(crate) fn encode(self) -> [u8; MESSAGE_LEN] {
        match self {
            FromWatchdog::Started { pid } => frame(STARTED, u64::from(pid)),
            // The errno's bits, zero-extended: `as u32` is the bit-preserving conversion.
            FromWatchdog::SpawnFailed { errno } => frame(SPAWN_FAILED, u64::from(errno as u32)),
        }
    }

    /// `None` for a malformed message.
    pub(crate) fn decode(m: &[u8; MESSAGE_LEN]) -> Option<FromWatchdog> {
        match unframe(m) {
            (STARTED, pid) => u32::try_from(pid).ok().map(|pid| FromWatchdog::Started { pid }),
            (SPAWN_FAILED, e) => {
                u32::try_from(e).ok().map(|e| FromWatchdog::SpawnFailed { errno: e as i32 })
            }
            _ => None,
        }
    }
}

/// Now, in nanoseconds of `CLOCK_MONOTONIC`.
pub(crate) fn monotonic_now_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// `at` in nanoseconds of `CLOCK_MONOTONIC`, rounded towards now: the clock is read before
/// `Instant::now()`, so the time between the two reads makes the result earlier, never later.
pub(crate) fn monotonic_ns(at: Instant) -> u64 {
    let mono = monotonic_now_ns();
    let ahead = at.saturating_duration_since(Instant::now());
    mono.saturating_add(u64::try_from(ahead.as_nanos()).unwrap_or(u64::MAX))
}

/// How long from now until the `CLOCK_MONOTONIC` time `at_ns` (zero once it has passed).
pub(crate) fn until_ns(at_ns: u64) -> Duration {
    Duration::from_nanos(at_ns.saturating_sub(monotonic_now_ns()))
}

/// A command's exit status as one byte, the shell's way: its exit code, or 128 plus the
/// signal that killed it; 1 if unknown. The watchdog exits with this, so the owner reads the
/// command's status as the watchdog's.
pub(crate) fn status_code(st: Option<ExitStatus>) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    match st.map(|st| (st.code(), st.signal())) {
        // The low byte, as the shell reports it.
        Some((Some(c), _)) => c as u8,
        Some((None, Some(s))) => (128 + s) as u8,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_unknown_ones_are_refused() {
        for m in [ToWatchdog::Renew { stop_at_ns: u64::MAX - 3 }, ToWatchdog::Stop] {
            assert_eq!(ToWatchdog::decode(&m.encode()), Some(m));
        }
        for m in [FromWatchdog::Started { pid: 4_000_000 }, FromWatchdog::SpawnFailed { errno: 2 }]
        {
            assert_eq!(FromWatchdog::decode(&m.encode()), Some(m));
        }
        assert_eq!(ToWatchdog::decode(&[0; MESSAGE_LEN]), None);
        assert_eq!(ToWatchdog::decode(&frame(STOP, 1)), None);
        assert_eq!(ToWatchdog::decode(&frame(STARTED, 1)), None);
        assert_eq!(FromWatchdog::decode(&frame(RENEW, 1)), None);
        assert_eq!(FromWatchdog::decode(&frame(STARTED, u64::MAX)), None);
    }

    #[test]
    fn an_instant_maps_onto_the_monotonic_clock_without_moving_later() {
        let at = Instant::now() + Duration::from_secs(2);
        let ns = monotonic_ns(at);
        let left = until_ns(ns);
        assert!(left <= Duration::from_secs(2), "{left:?}");
        assert!(left > Duration::from_millis(1_500), "{left:?}");
        assert_eq!(until_ns(0), Duration::ZERO);
    }
}
