//! The console's own optional login: HTTP Basic, which every browser asks for by itself.

use axum::http::HeaderMap;
use base64::Engine as _;

/// A user and password the console asks for on every request.
#[derive(Clone)]
pub struct BasicAuth {
    user: String,
    password: String,
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("BasicAuth").field("user", &self.user).finish()
    }
}

impl BasicAuth {
    /// Asks for `user` with `password`.
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> BasicAuth {
        BasicAuth { user: user.into(), password: password.into() }
    }

    /// Whether `headers` carry this login.
    pub(crate) fn allows(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(axum::http::header::AUTHORIZATION) else { return false };
        let Some(encoded) = value.to_str().ok().and_then(|v| v.strip_prefix("Basic ")) else {
            return false;
        };
        let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
            return false;
        };
        let expected = format!("{}:{}", self.user, self.password);
        same(&decoded, expected.as_bytes())
    }
}

/// Equal, in a time that depends on the lengths only, so that a guess's timing tells nothing
/// of how much of it was right (a password, a CSRF token).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use axum::http::{header::AUTHORIZATION, HeaderMap, HeaderValue};

    use super::BasicAuth;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn only_the_configured_login_passes() {
        let auth = BasicAuth::new("ops", "s3cret");
        assert!(auth.allows(&with("Basic b3BzOnMzY3JldA==")));
        assert!(!auth.allows(&with("Basic b3BzOnMzY3JldQ==")));
        assert!(!auth.allows(&with("Bearer b3BzOnMzY3JldA==")));
        assert!(!auth.allows(&with("Basic %%%")));
        assert!(!auth.allows(&HeaderMap::new()));
        assert!(!format!("{auth:?}").contains("s3cret"));
    }
}
