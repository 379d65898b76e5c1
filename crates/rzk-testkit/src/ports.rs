//! Free TCP ports on 127.0.0.1, for servers that must be told their port before they bind it.
//!
//! A port the kernel hands out for `bind(0)` comes from its ephemeral range, the range it also
//! draws the source port of every outgoing connection from: between the moment a test learns
//! such a port and the moment its JVM binds it, any connection on the machine can take it
//! ("Address already in use"). So the ports here come from below the ephemeral range, which
//! the kernel never hands out by itself. Each process walks that range from its own offset
//! (from its pid) and never hands out a port twice, so test processes running side by side
//! (scripts/run-tests.py) rarely meet; a port that is taken is skipped. Another process can
//! still take a port first; `zookeeper::assert_served_by` catches that.

use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The lowest port handed out: above the well-known and most registered service ports.
const PORT_MIN: u16 = 10_000;
/// The first ephemeral port where `/proc/sys/net/ipv4/ip_local_port_range` cannot be read
/// (Linux's default range starts here).
const EPHEMERAL_MIN_DEFAULT: u16 = 32_768;

/// A port that was free on 127.0.0.1 a moment ago.
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `n` distinct ports that were free on 127.0.0.1 a moment ago.
pub fn free_ports(n: usize) -> Vec<u16> {
    (0..n).map(|_| next_free()).collect()
}

/// The first port of the kernel's ephemeral range.
fn ephemeral_min() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(EPHEMERAL_MIN_DEFAULT)
}

/// The ports handed out: `PORT_MIN` up to the ephemeral range, and how many there are (the
/// range read once per process).
fn range() -> (u16, u32) {
    static RANGE: OnceLock<(u16, u32)> = OnceLock::new();
    *RANGE.get_or_init(|| {
        let top = ephemeral_min().max(PORT_MIN + 1_000);
        (top, u32::from(top - PORT_MIN))
    })
}

fn next_free() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    // The first call places this process's walk; later ones continue it.
    let start = std::process::id().wrapping_mul(7_919) % range().1;
    let _ = NEXT.compare_exchange(u32::MAX, start, Ordering::Relaxed, Ordering::Relaxed);
    walk(&NEXT)
}

/// The first port from `cursor` on that can be bound, moving the cursor past it.
fn walk(cursor: &AtomicU32) -> u16 {
    let (top, span) = range();
    for _ in 0..span {
        let port = PORT_MIN + (cursor.fetch_add(1, Ordering::Relaxed) % span) as u16;
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 in {PORT_MIN}..{top}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_and_below_the_ephemeral_range() {
        let ports = free_ports(200);
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ports.len(), "a port handed out twice");
        assert!(ports.iter().all(|&p| (PORT_MIN..ephemeral_min()).contains(&p)), "{ports:?}");
    }

    #[test]
    fn a_taken_port_is_skipped() {
        let cursor = AtomicU32::new(0);
        let _taken = TcpListener::bind((Ipv4Addr::LOCALHOST, PORT_MIN));
        // Taken by the listener above, or by another process: either way not handed out.
        assert_ne!(walk(&cursor), PORT_MIN);
        assert!(cursor.load(Ordering::Relaxed) >= 2);
    }
}
