//! Curator's protected node names: `_c_<uuid>-<lock name><10-digit sequence>`, and where the
//! recipes' random ids come from (the UUID of a protected name, a service instance's id): the
//! operating system's randomness, or, on a thread that asked for it with [`seed_node_ids`], a
//! generator seeded for a deterministic simulation, so that a seeded world (crates/rzk-world)
//! creates the same node names each time it runs.

use std::cell::RefCell;

/// Curator's `ProtectedUtils.PROTECTED_PREFIX`.
pub(crate) const PROTECTED_PREFIX: &str = "_c_";
/// The lock name of a LeaderLatch (`LeaderLatch.LOCK_NAME`).
pub(crate) const LATCH: &str = "latch-";
/// The lock name of a LeaderSelector (`LeaderSelector`'s InterProcessMutex).
pub(crate) const LOCK: &str = "lock-";
/// The lock name of a semaphore lease (`InterProcessSemaphoreV2.LEASE_BASE_NAME`).
pub(crate) const LEASE: &str = "lease-";

/// A child name this recipe can order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recognized<'a> {
    /// The 36-character UUID.
    pub uuid: &'a str,
    /// The 10-digit, non-negative sequence suffix (the sort key).
    pub sequence: &'a str,
}

/// True for a canonical 8-4-4-4-12 UUID (hex digits of either case), as Curator's
/// `isProtectedZNode` accepts.
fn is_uuid(b: &[u8]) -> bool {
    const GROUPS: [(usize, usize); 5] = [(0, 8), (9, 13), (14, 18), (19, 23), (24, 36)];
    b.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| b[i] == b'-')
        && GROUPS.iter().all(|&(from, to)| b[from..to].iter().all(u8::is_ascii_hexdigit))
}

/// Parses `_c_<uuid>-<lock><10 digits>`; anything else (other lock names, kazoo nodes, negative
/// or overlong sequences, junk) is foreign. Every join and handoff parses the whole list (1,000
/// names at N = 1,000), so this checks bytes and slices only once they are known to be ASCII.
pub(crate) fn parse<'a>(name: &'a str, lock: &str) -> Option<Recognized<'a>> {
    let b = name.as_bytes();
    let seq_at = PROTECTED_PREFIX.len() + 37 + lock.len();
    if b.len() != seq_at + 10
        || !b.starts_with(PROTECTED_PREFIX.as_bytes())
        || b[39] != b'-'
        || &b[40..seq_at] != lock.as_bytes()
        || !b[seq_at..].iter().all(u8::is_ascii_digit)
        || !is_uuid(&b[3..39])
    {
        return None;
    }
    // Bytes 3..40 and seq_at.. are ASCII, so these are character boundaries.
    Some(Recognized { uuid: &name[3..39], sequence: &name[seq_at..] })
}

/// The name prefix shared by every node one create attempt can produce: `_c_<uuid>-`.
pub(crate) fn uuid_prefix(uuid: &str) -> String {
    format!("{PROTECTED_PREFIX}{uuid}-")
}

/// The path to create (the server appends the sequence): `P/_c_<uuid>-<lock>`.
pub(crate) fn create_path(parent: &str, uuid: &str, lock: &str) -> String {
    format!("{parent}/{PROTECTED_PREFIX}{uuid}-{lock}")
}

/// Joins a parent path and a child name.
pub(crate) fn child_path(parent: &str, name: &str) -> String {
    format!("{parent}/{name}")
}

/// The parent of an absolute path (`/` for a child of the root).
pub(crate) fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The race election's epoch node, beside its fixed node.
pub(crate) fn race_epoch_path(path: &str) -> String {
    format!("{path}_epoch")
}

/// The last path segment.
pub(crate) fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Validates an election path: absolute, no trailing `/`, not the root, no empty segment.
pub(crate) fn validate_path(path: &str) -> Result<(), crate::Error> {
    let bad = |why: &str| Err(crate::Error::BadArguments(format!("election path {path:?}: {why}")));
    if !path.starts_with('/') {
        return bad("must be absolute");
    }
    if path == "/" {
        return bad("must not be the root");
    }
    if path.ends_with('/') {
        return bad("must not end with '/'");
    }
    if path.split('/').skip(1).any(|s| s.is_empty() || s == "." || s == "..") {
        return bad("has an empty, '.' or '..' segment");
    }
    if path.chars().any(|c| c == '\0') {
        return bad("contains NUL");
    }
    Ok(())
}

/// The value of a ten-digit sequence that `parse` accepted.
pub(crate) fn sequence_number(digits: &str) -> u64 {
    digits.bytes().fold(0, |n, d| n * 10 + u64::from(d - b'0'))
}

/// True if an `ephemeralOwner` is a session id: not 0 (persistent, and containers and TTL nodes
/// as ZooKeeper reports them), not `i64::MIN` (the container marker), not a TTL marker (top byte
/// `0xff`).
pub fn is_session_owner(owner: i64) -> bool {
    owner != 0 && owner != i64::MIN && (owner as u64) >> 56 != 0xff
}

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

#[cfg(test)]
mod tests {
    use super::*;

    const U: &str = "0f8e2b9a-5c3d-4e1f-8a7b-6c5d4e3f2a1b";

    #[test]
    fn recognizes_curator_names() {
        let n = format!("_c_{U}-latch-0000000012");
        assert_eq!(parse(&n, LATCH), Some(Recognized { uuid: U, sequence: "0000000012" }));
        assert_eq!(parse(&n, LOCK), None);
        let upper = format!("_c_{}-lock-0000000000", U.to_uppercase());
        assert!(parse(&upper, LOCK).is_some());
    }

    #[test]
    fn rejects_foreign_names() {
        for n in [
            "0123456789abcdef0123456789abcdef__lock__0000000003".to_string(),
            format!("_c_{U}-latch--000000001"),
            format!("_c_{U}-latch-000000001"),
            format!("_c_{U}-latch-00000000012"),
            format!("_c_{U}-latch-000000001x"),
            "_c_not-a-uuid-at-all-latch-0000000001".to_string(),
            "latch-0000000001".to_string(),
            "config".to_string(),
            format!("_c_{U}latch-0000000001"),
            // Right length, but multi-byte characters where the UUID goes: no slicing panic.
            format!("_c_{}-latch-0000000001", "é".repeat(18)),
            format!("_c_{U}-latch-000000000é"),
        ] {
            assert_eq!(parse(&n, LATCH), None, "{n}");
        }
    }

    #[test]
    fn owners() {
        assert!(is_session_owner(0x1000_0000_0000_0001));
        assert!(is_session_owner(1));
        assert!(!is_session_owner(0));
        assert!(!is_session_owner(i64::MIN));
        assert!(!is_session_owner(-1));
        assert!(!is_session_owner(0xff00_0000_0000_0001_u64 as i64));
    }

    #[test]
    fn paths() {
        assert!(validate_path("/demo/leader").is_ok());
        for p in ["", "demo", "/", "/demo/", "/a//b", "/a/./b"] {
            assert!(validate_path(p).is_err(), "{p}");
        }
        assert_eq!(name_of("/a/b/c"), "c");
    }
}
