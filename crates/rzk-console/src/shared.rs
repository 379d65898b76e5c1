//! What every request handler shares: the session it reads through, the configuration, the
//! live watches, the CSRF token of the write forms, and the `Host` names it answers to.

use std::net::SocketAddr;

use rzk_recipes::session::Session;

use crate::coalesce::Coalesced;
use crate::read::{scan::Scan, servers::Identity, sessions::Sessions, ReadError};
use crate::{live, ConsoleConfig};

/// The overview's reads: the tree's recipes, and who each server says it is.
pub(crate) type OverviewRead = (Result<Scan, ReadError>, Vec<Identity>);

/// The handlers' shared state.
pub(crate) struct Shared {
    pub session: Session,
    pub config: ConsoleConfig,
    pub live: live::Live,
    /// The token every write form carries; `None` when writes are off.
    pub csrf: Option<String>,
    /// The `Host` values a request may name (a DNS-rebinding page names its own); `None`, any,
    /// for a console bound to every address.
    pub hosts: Option<Vec<String>>,
    /// The overview's last walk of the tree, shared by the pages that ask at once.
    pub overview: Coalesced<OverviewRead>,
    /// The sessions page's.
    pub sessions: Coalesced<Result<Sessions, ReadError>>,
}

impl Shared {
    /// The CSRF token pages put in their write forms, when writes are on.
    pub fn writes(&self) -> Option<&str> {
        self.csrf.as_deref()
    }

    /// Whether a request's `Host` (or a form's `Origin` host) is one the console answers to.
    pub fn answers_to(&self, host: &str) -> bool {
        self.hosts.as_ref().is_none_or(|hosts| hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
    }
}

/// The `Host` values of a console listening on `addr`: its address, and `localhost` beside a
/// loopback one; any, for the unspecified address (which names no host to check against).
pub(crate) fn allowed_hosts(addr: SocketAddr) -> Option<Vec<String>> {
    if addr.ip().is_unspecified() {
        return None;
    }
    let mut hosts = vec![addr.to_string()];
    if addr.ip().is_loopback() {
        hosts.push(format!("localhost:{}", addr.port()));
    }
    Some(hosts)
}
