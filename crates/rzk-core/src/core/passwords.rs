//! Session passwords and SASL nonces, derived from the configured seed.

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

    /// The nonce of the SASL exchange on connection `conn`: keyed like the passwords, so a
    /// client learns nothing of another connection's nonce, and deterministic for a seed.
    pub(super) fn sasl_nonce(&self, conn: u64) -> String {
        let mut h = sha1_smol::Sha1::new();
        h.update(&self.key);
        h.update(&conn.to_be_bytes());
        h.update(b"rzk sasl nonce");
        h.update(&self.key);
        h.digest().to_string()
    }
}
