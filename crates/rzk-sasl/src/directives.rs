//! RFC 2831's `name=value` lists, both ways: a challenge or response is read into its
//! directives within named limits, and written back with the quoting each directive takes.

use crate::SaslError;

/// Directives one token may carry; RFC 2831's challenge and response have fewer than 16.
pub const DIRECTIVES_MAX: usize = 32;
/// Bytes one DIGEST-MD5 token may have (RFC 2831 §2.1.1 bounds a challenge at 2048 and a
/// response at 4096; a little more is allowed for long user names).
pub const TOKEN_BYTES_MAX: usize = 8 * 1024;

/// A token's directives, in their order; a name repeated is kept once per occurrence, and
/// [`Directives::one`] refuses the repetition where RFC 2831 allows one.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Directives(Vec<(String, String)>);

impl Directives {
    /// Reads `token`.
    ///
    /// # Errors
    /// [`SaslError::Malformed`] for anything that is not a comma-separated list of
    /// `name=value` or `name="quoted value"`, or is over [`TOKEN_BYTES_MAX`] or
    /// [`DIRECTIVES_MAX`].
    pub fn parse(token: &[u8]) -> Result<Directives, SaslError> {
        if token.len() > TOKEN_BYTES_MAX {
            return Err(SaslError::Malformed(format!(
                "a token of {} bytes, over the {TOKEN_BYTES_MAX}-byte limit",
                token.len()
            )));
        }
        let text = std::str::from_utf8(token)
            .map_err(|_| SaslError::Malformed("a token that is not UTF-8".into()))?;
        let mut out = Vec::new();
        let mut rest = text.trim_start_matches([' ', '\t', ',']);
        while !rest.is_empty() {
            if out.len() == DIRECTIVES_MAX {
                return Err(SaslError::Malformed(format!("over {DIRECTIVES_MAX} directives")));
            }
            let (name, after) = rest
                .split_once('=')
                .ok_or_else(|| SaslError::Malformed(format!("no `=` in `{}`", clip(rest))))?;
            let name = name.trim();
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return Err(SaslError::Malformed(format!("a bad directive name `{}`", clip(name))));
            }
            let after = after.trim_start();
            let (value, after) = match after.strip_prefix('"') {
                Some(quoted) => unquote(quoted)?,
                None => match after.find(',') {
                    Some(i) => (after[..i].trim_end().to_owned(), &after[i..]),
                    None => (after.trim_end().to_owned(), ""),
                },
            };
            out.push((name.to_ascii_lowercase(), value));
            let after = after.trim_start();
            if !after.is_empty() && !after.starts_with(',') {
                return Err(SaslError::Malformed(format!(
                    "`{}` after the value of {name}",
                    clip(after)
                )));
            }
            rest = after.trim_start_matches([' ', '\t', ',']);
        }
        Ok(Directives(out))
    }

    /// The value of `name`, if present once.
    ///
    /// # Errors
    /// [`SaslError::Malformed`] when `name` appears more than once.
    pub fn one(&self, name: &str) -> Result<Option<&str>, SaslError> {
        let mut found = self.0.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str());
        let first = found.next();
        if found.next().is_some() {
            return Err(SaslError::Malformed(format!("{name} given more than once")));
        }
        Ok(first)
    }

    /// The value of `name`, which must be present once.
    ///
    /// # Errors
    /// [`SaslError::Malformed`] when it is missing or repeated.
    pub fn required(&self, name: &str) -> Result<&str, SaslError> {
        self.one(name)?.ok_or_else(|| SaslError::Malformed(format!("no {name} directive")))
    }

    /// Every value of `name` (realm may be offered several times).
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0.iter().filter(move |(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A quoted value up to its closing quote, and what follows it.
fn unquote(s: &str) -> Result<(String, &str), SaslError> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, escaped)) => value.push(escaped),
                None => break,
            },
            c => value.push(c),
        }
    }
    Err(SaslError::Malformed("a quoted value without its closing quote".into()))
}

/// The first characters of `s`, for an error message that must stay short.
fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

/// Builds a token, directive by directive.
#[derive(Debug, Default)]
pub struct Writer(String);

impl Writer {
    /// `name="value"`, with `"` and `\` escaped.
    pub fn quoted(mut self, name: &str, value: &str) -> Self {
        self.sep();
        self.0.push_str(name);
        self.0.push_str("=\"");
        for c in value.chars() {
            if c == '"' || c == '\\' {
                self.0.push('\\');
            }
            self.0.push(c);
        }
        self.0.push('"');
        self
    }

    /// `name=value`, for the directives RFC 2831 writes as tokens.
    pub fn token(mut self, name: &str, value: &str) -> Self {
        self.sep();
        self.0.push_str(name);
        self.0.push('=');
        self.0.push_str(value);
        self
    }

    fn sep(&mut self) {
        if !self.0.is_empty() {
            self.0.push(',');
        }
    }

    pub fn finish(self) -> Vec<u8> {
        self.0.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quoted_and_plain_values_with_escapes() {
        let d = Directives::parse(
            br#"realm="zk-sasl-md5",nonce="a\"b\\c", qop="auth",charset=utf-8,algorithm=md5-sess"#,
        )
        .unwrap();
        assert_eq!(d.required("realm").unwrap(), "zk-sasl-md5");
        assert_eq!(d.required("nonce").unwrap(), "a\"b\\c");
        assert_eq!(d.required("charset").unwrap(), "utf-8");
        assert_eq!(d.one("cipher").unwrap(), None);
    }

    #[test]
    fn writes_what_it_reads() {
        let t = Writer::default().quoted("username", "bo\"b").token("nc", "00000001").finish();
        let d = Directives::parse(&t).unwrap();
        assert_eq!(d.required("username").unwrap(), "bo\"b");
        assert_eq!(d.required("nc").unwrap(), "00000001");
    }

    #[test]
    fn refuses_garbage_within_its_limits() {
        for bad in [&b"nonce"[..], b"nonce=\"open", b"=x", b"a b=c", b"nonce=\"x\"y", b"\xff=1"] {
            assert!(Directives::parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let long = vec![b'a'; TOKEN_BYTES_MAX + 1];
        assert!(Directives::parse(&long).is_err());
        let many = (0..=DIRECTIVES_MAX).map(|i| format!("d{i}=1")).collect::<Vec<_>>().join(",");
        assert!(Directives::parse(many.as_bytes()).is_err());
        let twice = Directives::parse(b"nonce=a,nonce=b").unwrap();
        assert!(twice.one("nonce").is_err());
    }
}
