//! Session passwords, derived from the session id and the configured seed.

/// Session passwords: a keyed hash of the session id, so that a client that sees its own
/// password and id learns nothing about any other session's (a seeded generator's outputs
/// can be run forward from one of them, and session ids are sequential).
#[derive(Debug, Clone)]
pub(super) struct Passwords {
    pub(super) key: [u8; 16],
}

impl Passwords {
    pub(super) fn of(&self, session_id: i64) -> [u8; 16] {
        let mut h = sha1_smol::Sha1::new();
        h.update(&self.key);
        h.update(&session_id.to_be_bytes());
        h.update(b"rzk session password");
        h.update(&self.key);
        let mut p = [0u8; 16];
        p.copy_from_slice(&h.digest().bytes()[..16]);
        p
    }
}
