//! ACL evaluation: schemes `world`, `auth`, `digest`, `ip`, `x509` and the super user.
//!
//! ACL lists are interned ([`AclCache`]): a million znodes usually share a handful of lists, so
//! each node stores a 4-byte id instead of its own vector.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use rzk_proto::{perms, Acl, Id};

/// An interned ACL list.
pub type AclId = u32;

/// Reference-counted interning of ACL lists.
#[derive(Debug, Default, Clone)]
pub struct AclCache {
    lists: Vec<Arc<[Acl]>>,
    refs: Vec<u64>,
    index: HashMap<Arc<[Acl]>, AclId>,
    free: Vec<AclId>,
}

impl AclCache {
    /// Interns `acl` and takes a reference to it.
    pub fn intern(&mut self, acl: &[Acl]) -> AclId {
        if let Some(&id) = self.index.get(acl) {
            self.refs[id as usize] += 1;
            return id;
        }
        let list: Arc<[Acl]> = acl.into();
        let id = if let Some(id) = self.free.pop() {
            self.lists[id as usize] = list.clone();
            self.refs[id as usize] = 1;
            id
        } else {
            self.lists.push(list.clone());
            self.refs.push(1);
            (self.lists.len() - 1) as AclId
        };
        self.index.insert(list, id);
        id
    }

    /// Drops one reference; the list is forgotten when none remain.
    pub fn release(&mut self, id: AclId) {
        let r = &mut self.refs[id as usize];
        *r -= 1;
        if *r == 0 {
            let list = std::mem::replace(&mut self.lists[id as usize], Arc::from(Vec::new()));
            self.index.remove(&list);
            self.free.push(id);
        }
    }

    /// The list behind an id.
    pub fn get(&self, id: AclId) -> &[Acl] {
        &self.lists[id as usize]
    }

    /// A shared handle to the list behind an id, which outlives the id.
    pub fn shared(&self, id: AclId) -> Arc<[Acl]> {
        self.lists[id as usize].clone()
    }

    /// Number of distinct live lists.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether no lists are interned.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

/// Whether `auth` (the caller's authenticated ids, which always include its `ip` id) grants
/// `perm` under `acl`.
pub fn check(acl: &[Acl], perm: i32, auth: &[Id]) -> bool {
    if auth.iter().any(|a| a.scheme == "super") {
        return true;
    }
    if acl.is_empty() {
        return true;
    }
    acl.iter().filter(|a| a.perms & perm != 0).any(|a| {
        let id = &a.id;
        match id.scheme.as_str() {
            "world" => id.id == "anyone",
            "ip" => auth.iter().any(|x| x.scheme == "ip" && ip_matches(&id.id, &x.id)),
            _ => auth.iter().any(|x| x.scheme == id.scheme && x.id == id.id),
        }
    })
}

/// `IPAuthenticationProvider.matches`: `id` is an address with an optional `/bits` mask.
fn ip_matches(pattern: &str, addr: &str) -> bool {
    let (net, bits) = match pattern.split_once('/') {
        Some((n, b)) => match b.parse::<u32>() {
            Ok(b) => (n, Some(b)),
            Err(_) => return false,
        },
        None => (pattern, None),
    };
    let (Ok(net), Ok(addr)) = (net.parse::<IpAddr>(), addr.parse::<IpAddr>()) else {
        return false;
    };
    let (net, addr, width) = match (net, addr) {
        (IpAddr::V4(n), IpAddr::V4(a)) => (u32::from(n) as u128, u32::from(a) as u128, 32),
        (IpAddr::V6(n), IpAddr::V6(a)) => (u128::from(n), u128::from(a), 128),
        _ => return false,
    };
    let bits = bits.unwrap_or(width).min(width);
    if bits == 0 {
        return true;
    }
    let shift = width - bits;
    (net >> shift) == (addr >> shift)
}

fn ip_is_valid(id: &str) -> bool {
    let (net, bits) = match id.split_once('/') {
        Some((n, b)) => (n, Some(b)),
        None => (id, None),
    };
    let Ok(addr) = net.parse::<IpAddr>() else { return false };
    let width = if addr.is_ipv4() { 32 } else { 128 };
    bits.is_none_or(|b| b.parse::<u32>().is_ok_and(|b| b <= width))
}

/// Whether an ACL entry names a valid id for its scheme. `auth` entries are handled by
/// [`fixup`] before this is asked.
fn id_is_valid(id: &Id) -> bool {
    match id.scheme.as_str() {
        "world" => id.id == "anyone",
        "digest" => id.id.split(':').count() == 2,
        "ip" => ip_is_valid(&id.id),
        "super" => true,
        // A certificate subject's distinguished name, or a SASL user, matched exactly.
        "x509" | "sasl" => !id.id.is_empty(),
        _ => false,
    }
}

/// Bounds on one node's ACL, checked while `auth` entries are expanded: each such entry
/// copies every id of the caller, so a short request could otherwise ask for a huge list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AclLimits {
    /// Most entries.
    pub entries_max: usize,
    /// Most bytes on the wire.
    pub bytes_max: usize,
}

impl AclLimits {
    /// No bound, for trusted input (tests and tools).
    pub const NONE: AclLimits = AclLimits { entries_max: usize::MAX, bytes_max: usize::MAX };
}

/// Bytes an ACL entry takes on the wire: perms, then scheme and id as length-prefixed strings.
pub fn wire_bytes(a: &Acl) -> usize {
    12 + a.id.scheme.len() + a.id.id.len()
}

/// `PrepRequestProcessor.fixupACL`: replaces `auth` entries with the caller's authenticated
/// (non-`ip`) ids, validates the rest and removes duplicates. `None` means `InvalidACL`,
/// which is also the answer to a list beyond `limits`.
pub fn fixup(acl: &[Acl], auth: &[Id], limits: AclLimits) -> Option<Vec<Acl>> {
    if acl.is_empty() || acl.len() > limits.entries_max {
        return None;
    }
    let mut out: Vec<Acl> = Vec::with_capacity(acl.len());
    let mut seen = std::collections::HashSet::with_capacity(acl.len());
    let mut bytes = 0usize;
    // False once the list is over its limits; duplicates cost nothing.
    let mut add = |a: Acl, out: &mut Vec<Acl>| -> bool {
        if seen.contains(&a) {
            return true;
        }
        bytes = bytes.saturating_add(wire_bytes(&a));
        if bytes > limits.bytes_max || out.len() >= limits.entries_max {
            return false;
        }
        seen.insert(a.clone());
        out.push(a);
        true
    };
    for a in acl {
        if a.id.scheme == "auth" {
            let mut added = false;
            for id in auth.iter().filter(|id| id.scheme != "ip" && id.scheme != "super") {
                if !add(Acl { perms: a.perms, id: id.clone() }, &mut out) {
                    return None;
                }
                added = true;
            }
            if !added {
                return None;
            }
        } else if id_is_valid(&a.id) {
            if !add(a.clone(), &mut out) {
                return None;
            }
        } else {
            return None;
        }
    }
    Some(out)
}

/// `DigestAuthenticationProvider.generateDigest`: `user:base64(sha1("user:password"))`.
pub fn digest(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or("");
    let hash = sha1_smol::Sha1::from(user_password.as_bytes()).digest().bytes();
    format!("{user}:{}", base64(&hash))
}

/// Standard base64 with padding (what `java.util.Base64.getEncoder()` produces).
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The ids a successful `digest` auth packet adds: the digest id, plus `super` when it
/// matches the configured super digest.
pub fn digest_auth_ids(credentials: &[u8], super_digest: Option<&str>) -> Vec<Id> {
    let text = String::from_utf8_lossy(credentials);
    let id = digest(&text);
    let mut ids = Vec::with_capacity(2);
    if super_digest == Some(id.as_str()) {
        ids.push(Id::new("super", ""));
    }
    ids.push(Id::new("digest", id));
    ids
}

/// The ACL `getACL` shows a caller without ADMIN: digest hashes are masked as `user:x`.
pub fn masked(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| {
            if a.id.scheme == "digest" {
                let user = a.id.id.split(':').next().unwrap_or("");
                Acl { perms: a.perms, id: Id::new("digest", format!("{user}:x")) }
            } else {
                a.clone()
            }
        })
        .collect()
}

/// Permission needed to read an ACL (`READ` or `ADMIN`).
pub const READ_OR_ADMIN: i32 = perms::READ | perms::ADMIN;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_matches_zookeeper() {
        // The super digest that kazoo's and zookeeper-client's harnesses configure for "test".
        assert_eq!(digest("super:test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }

    #[test]
    fn ip_masks() {
        assert!(ip_matches("127.0.0.1", "127.0.0.1"));
        assert!(ip_matches("127.0.0.0/8", "127.1.2.3"));
        assert!(!ip_matches("10.0.0.0/8", "127.1.2.3"));
        assert!(ip_matches("0.0.0.0/0", "1.2.3.4"));
        assert!(!ip_matches("127.0.0.1", "::1"));
    }

    #[test]
    fn fixup_rules() {
        let any = AclLimits::NONE;
        let world = Acl::open();
        assert_eq!(fixup(&world, &[], any), Some(world.clone()));
        assert_eq!(fixup(&[], &[], any), None);
        let auth = vec![Acl { perms: perms::ALL, id: Id::new("auth", "") }];
        assert_eq!(fixup(&auth, &[Id::new("ip", "127.0.0.1")], any), None);
        let ids = [Id::new("ip", "127.0.0.1"), Id::new("digest", "u:h")];
        assert_eq!(
            fixup(&auth, &ids, any),
            Some(vec![Acl { perms: perms::ALL, id: Id::new("digest", "u:h") }])
        );
        let bad = vec![Acl { perms: perms::ALL, id: Id::new("nosuch", "x") }];
        assert_eq!(fixup(&bad, &[], any), None);
        let dup = vec![world[0].clone(), world[0].clone()];
        assert_eq!(fixup(&dup, &[], any), Some(world));
    }

    #[test]
    fn fixup_bounds_the_expanded_list_not_just_the_request() {
        // Three `auth` entries with different perms, each copying both of the caller's ids.
        let ids = [Id::new("digest", "a:h"), Id::new("digest", "b:h")];
        let acl: Vec<Acl> = (1..=3).map(|perms| Acl { perms, id: Id::new("auth", "") }).collect();
        let six = AclLimits { entries_max: 6, bytes_max: usize::MAX };
        assert_eq!(fixup(&acl, &ids, six).map(|l| l.len()), Some(6));
        let five = AclLimits { entries_max: 5, bytes_max: usize::MAX };
        assert_eq!(fixup(&acl, &ids, five), None, "six entries once expanded");
        let one_entry = wire_bytes(&Acl { perms: 1, id: ids[0].clone() });
        let bytes = AclLimits { entries_max: usize::MAX, bytes_max: 6 * one_entry - 1 };
        assert_eq!(fixup(&acl, &ids, bytes), None, "one byte over");
        // Duplicates are free: a thousand copies of one entry make one entry.
        let same = vec![Acl::open()[0].clone(); 1000];
        let tight = AclLimits { entries_max: 1000, bytes_max: wire_bytes(&same[0]) };
        assert_eq!(fixup(&same, &[], tight), Some(Acl::open()));
        let request_too_long = AclLimits { entries_max: 999, bytes_max: usize::MAX };
        assert_eq!(fixup(&same, &[], request_too_long), None, "the request itself is checked");
    }

    #[test]
    fn cache_interns_and_frees() {
        let mut c = AclCache::default();
        let a = c.intern(&Acl::open());
        let b = c.intern(&Acl::open());
        assert_eq!(a, b);
        let r = c.intern(&Acl::read_only());
        assert_ne!(a, r);
        c.release(r);
        assert_eq!(c.len(), 1);
        let r2 = c.intern(&Acl::read_only());
        assert_eq!(r2, r, "freed slot is reused");
        c.release(a);
        c.release(b);
        assert_eq!(c.get(r2), &Acl::read_only()[..]);
    }
}
