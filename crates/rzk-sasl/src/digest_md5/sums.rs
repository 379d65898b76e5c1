//! The sums both sides compute (RFC 2831 §2.1.2.1), and the names ZooKeeper fixes.

/// The service (digest-uri's serv-type) ZooKeeper's client and server both name.
pub const SERVICE: &str = "zookeeper";
/// The server name ZooKeeper's client and server both use, whatever the host: the
/// digest-uri's host, and the realm a Java server offers.
pub const SERVER_NAME: &str = "zk-sasl-md5";
/// `SERVICE/SERVER_NAME`.
pub const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";
/// The nonce count of an initial authentication, the only kind rzk makes.
pub(crate) const NONCE_COUNT: &str = "00000001";

/// One exchange's inputs to the response value.
pub(crate) struct Exchange<'a> {
    pub username: &'a str,
    pub realm: &'a str,
    pub password: &'a str,
    pub nonce: &'a str,
    pub cnonce: &'a str,
    pub authzid: Option<&'a str>,
    pub digest_uri: &'a str,
}

/// Which of the two values: the client's `response`, or the server's `rspauth`, which differ
/// only in A2's prefix.
#[derive(Clone, Copy)]
pub(crate) enum Side {
    Response,
    RspAuth,
}

impl Exchange<'_> {
    /// The 32 hex digits of `response` or `rspauth`.
    pub fn value(&self, side: Side) -> String {
        let mut secret = encoded(self.username);
        secret.push(b':');
        secret.extend(encoded(self.realm));
        secret.push(b':');
        secret.extend(encoded(self.password));
        let mut a1 = md5::compute(&secret).0.to_vec();
        a1.extend_from_slice(format!(":{}:{}", self.nonce, self.cnonce).as_bytes());
        if let Some(z) = self.authzid {
            a1.push(b':');
            a1.extend_from_slice(z.as_bytes());
        }
        let prefix = match side {
            Side::Response => "AUTHENTICATE",
            Side::RspAuth => "",
        };
        let ha1 = hex(&md5::compute(&a1).0);
        let ha2 = hex(&md5::compute(format!("{prefix}:{}", self.digest_uri)).0);
        let kd = format!("{ha1}:{}:{NONCE_COUNT}:{}:auth:{ha2}", self.nonce, self.cnonce);
        hex(&md5::compute(kd).0)
    }
}

/// RFC 2831's rule for `charset=utf-8`: a string whose characters all fit ISO 8859-1 is
/// hashed in ISO 8859-1, any other in UTF-8 (as Java's DIGEST-MD5 does on both sides).
fn encoded(s: &str) -> Vec<u8> {
    if s.chars().all(|c| u32::from(c) <= 0xff) {
        s.chars().map(|c| c as u8).collect()
    } else {
        s.as_bytes().to_vec()
    }
}

/// Lower-case hex, as RFC 2831 writes every hash (and a client writes its cnonce).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Compares two proofs in time independent of where they differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2831 §4's worked example (IMAP, user chris, password secret): the RFC's own
    /// response and rspauth.
    #[test]
    fn rfc_2831_example() {
        let x = Exchange {
            username: "chris",
            realm: "elwood.innosoft.com",
            password: "secret",
            nonce: "OA6MG9tEQGm2hh",
            cnonce: "OA6MHXh6VqTrRk",
            authzid: None,
            digest_uri: "imap/elwood.innosoft.com",
        };
        assert_eq!(x.value(Side::Response), "d388dad90d4bbd760a152321f2143af7");
        assert_eq!(x.value(Side::RspAuth), "ea40f60335c427b5527b84dbabcdfffd");
    }

    #[test]
    fn latin1_strings_hash_as_latin1() {
        assert_eq!(encoded("café"), vec![b'c', b'a', b'f', 0xe9]);
        assert_eq!(encoded("日本"), "日本".as_bytes());
    }

    #[test]
    fn proofs_compare_whole() {
        assert!(same("abcd", "abcd"));
        assert!(!same("abcd", "abce"));
        assert!(!same("abc", "abcd"));
    }
}
