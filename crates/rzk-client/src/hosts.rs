//! The connect string: `host:port[,host:port...][/chroot]`, as ZooKeeper's clients take it.

use crate::Error;

/// The port a host without one is reached on.
const DEFAULT_PORT: u16 = 2181;

/// A parsed connect string: what the client connects to, for tools that reach the same
/// servers another way (the console's four-letter words).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectString {
    /// `host:port` addresses, in the order given, a host without a port on 2181; the client
    /// starts at a random one.
    pub hosts: Vec<String>,
    /// The chroot every path is relative to; `None` for `/`.
    pub chroot: Option<String>,
}

impl ConnectString {
    /// Parses `s`.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for no hosts, a bad port or a bad chroot.
    pub fn parse(s: &str) -> Result<ConnectString, Error> {
        let (hosts, chroot) = match s.find('/') {
            Some(i) => (&s[..i], Some(&s[i..])),
            None => (s, None),
        };
        let chroot = match chroot {
            None | Some("/") => None,
            Some(c) if c.ends_with('/') || c.contains("//") => {
                return Err(Error::BadArguments("the chroot must be a path without a trailing /"))
            }
            Some(c) => Some(c.to_owned()),
        };
        let mut out = Vec::new();
        for h in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            let (host, port) = match h.rsplit_once(':') {
                Some((host, _)) if !host.ends_with(']') && host.contains(':') => (h, None),
                Some((host, port)) => (host, Some(port)),
                None => (h, None),
            };
            let port = match port {
                None => DEFAULT_PORT,
                Some(p) => p.parse().map_err(|_| Error::BadArguments("a port is not a number"))?,
            };
            if host.is_empty() {
                return Err(Error::BadArguments("a host in the connect string is empty"));
            }
            out.push(format!("{host}:{port}"));
        }
        if out.is_empty() {
            return Err(Error::BadArguments("the connect string names no host"));
        }
        Ok(ConnectString { hosts: out, chroot })
    }
}

/// Paths between the caller's view (relative to the chroot) and the server's.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chroot(Option<String>);

impl Chroot {
    pub fn new(chroot: Option<String>) -> Chroot {
        Chroot(chroot)
    }

    /// The server's path for the caller's `path`, checked as ZooKeeper's `PathUtils` does.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a path that is not absolute, ends in `/` or has an empty
    /// component.
    pub fn to_server(&self, path: &str) -> Result<String, Error> {
        validate(path)?;
        Ok(match &self.0 {
            None => path.to_owned(),
            Some(root) if path == "/" => root.clone(),
            Some(root) => format!("{root}{path}"),
        })
    }

    /// The caller's path for a server's `path`; a path outside the chroot is kept whole.
    pub fn to_client(&self, path: String) -> String {
        match &self.0 {
            None => path,
            Some(root) => match path.strip_prefix(root.as_str()) {
                Some("") => "/".to_owned(),
                Some(rest) if rest.starts_with('/') => rest.to_owned(),
                _ => path,
            },
        }
    }
}

fn validate(path: &str) -> Result<(), Error> {
    if !path.starts_with('/') {
        return Err(Error::BadArguments("a path must start with /"));
    }
    if path.len() > 1 && path.ends_with('/') {
        return Err(Error::BadArguments("a path must not end with /"));
    }
    if path.contains("//") {
        return Err(Error::BadArguments("a path must not have an empty component"));
    }
    if path.split('/').any(|c| c == "." || c == "..") {
        return Err(Error::BadArguments("a path must not have . or .. components"));
    }
    if path.chars().any(|c| c == '\0') {
        return Err(Error::BadArguments("a path must not contain NUL"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_strings() {
        let c = ConnectString::parse("a:1, b ,c:3/app/x").unwrap();
        assert_eq!(c.hosts, ["a:1", "b:2181", "c:3"]);
        assert_eq!(c.chroot.as_deref(), Some("/app/x"));
        assert_eq!(ConnectString::parse("a/").unwrap().chroot, None);
        assert!(ConnectString::parse("").is_err());
        assert!(ConnectString::parse("a:x").is_err());
        assert!(ConnectString::parse("a/b/").is_err());
        let v6 = ConnectString::parse("[::1]:2181,[fe80::1],h:1/app").unwrap();
        assert_eq!(v6.hosts, ["[::1]:2181", "[fe80::1]:2181", "h:1"]);
        assert_eq!(v6.chroot.as_deref(), Some("/app"));
    }

    #[test]
    fn chroot_maps_both_ways() {
        let c = Chroot::new(Some("/app".into()));
        assert_eq!(c.to_server("/").unwrap(), "/app");
        assert_eq!(c.to_server("/x").unwrap(), "/app/x");
        assert_eq!(c.to_client("/app".into()), "/");
        assert_eq!(c.to_client("/app/x".into()), "/x");
        assert_eq!(c.to_client("/apple".into()), "/apple");
        assert!(c.to_server("x").is_err());
        assert!(c.to_server("/x/").is_err());
        assert!(c.to_server("/a//b").is_err());
        assert!(Chroot::default().to_server("/").is_ok());
    }
}
