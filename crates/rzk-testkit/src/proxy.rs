//! The fault-injecting TCP proxy, rzk-wirekit's [`rzk_wirekit::proxy::Proxy`] (its module says
//! what each fault does and which runtime it runs on), with the start a test wants: one that
//! panics, with the upstream in the message, when the proxy cannot listen.

use std::ops::Deref;

/// rzk-wirekit's proxy, started by [`Proxy::start`]; everything is closed on drop.
pub struct Proxy(rzk_wirekit::proxy::Proxy);

impl Proxy {
    /// Starts forwarding connections to `upstream` (`host:port`), passing everything.
    ///
    /// # Panics
    /// When the proxy cannot listen on 127.0.0.1 (or, outside a tokio runtime, cannot build
    /// its own).
    pub fn start(upstream: impl ToString) -> Proxy {
        let upstream = upstream.to_string();
        match rzk_wirekit::proxy::Proxy::start(&upstream) {
            Ok(proxy) => Proxy(proxy),
            Err(e) => panic!("start a proxy to {upstream}: {e}"),
        }
    }
}

impl Deref for Proxy {
    type Target = rzk_wirekit::proxy::Proxy;

    fn deref(&self) -> &rzk_wirekit::proxy::Proxy {
        &self.0
    }
}
