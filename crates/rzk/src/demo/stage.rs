//! What every scenario of the demo shares: the in-process server's address, the clock the
//! timeline is printed on, the sessions it opens, and what it keeps alive for `--ui`.

use std::any::Any;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rzk_recipes::session::{Session, SessionConfig};

/// The demo's server and timeline.
pub(super) struct Stage {
    /// When the demo started: the timeline's zero.
    pub start: Instant,
    /// The server's connect string.
    pub hosts: String,
    /// The server's address, for a proxy in front of it.
    pub server: SocketAddr,
    /// Every session's timeout.
    pub session_timeout: Duration,
}

impl Stage {
    /// One line of the timeline.
    pub fn log(&self, what: impl std::fmt::Display) {
        println!("[{:>7.3}s] {what}", self.start.elapsed().as_secs_f64());
    }

    /// A new session to `hosts` (the server, or a proxy in front of it).
    pub async fn session_to(&self, hosts: &str) -> anyhow::Result<Session> {
        let cfg = SessionConfig::new(hosts).with_session_timeout(self.session_timeout);
        Ok(Session::connect(cfg).await?)
    }

    /// A new session to the server.
    pub async fn session(&self) -> anyhow::Result<Session> {
        self.session_to(&self.hosts).await
    }
}

/// What the scenarios leave running (sessions, a leader, a lock's holder, a registration), so
/// that `rzk demo --ui` shows a live system after they end; dropped, it all goes.
#[derive(Default)]
pub(super) struct Kept(Vec<Box<dyn Any + Send>>);

impl Kept {
    pub fn keep(&mut self, thing: impl Any + Send) {
        self.0.push(Box::new(thing));
    }
}

/// Polls `done` every millisecond until it holds or `within` passes; how long it took.
pub(super) async fn until(within: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > within {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Some(start.elapsed())
}
