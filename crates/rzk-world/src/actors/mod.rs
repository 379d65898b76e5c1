//! The world's client processes: each runs real rzk-recipes code on its own session over its
//! own [`SimNet`], and reports what it believed and what the server acknowledged to the
//! [`Recorder`]. A process checks, at the moment it matters, what only the server's state can
//! show: that a hold runs on its current session's node, and that a release took its node.

mod data;
mod discovery;
mod recorder;
mod terms;

use std::sync::Arc;
use std::time::Duration;

use rzk_recipes::{
    election::ConnectionPolicy,
    lock::MutexOptions,
    session::{Session, SessionConfig},
    Leadership,
};

use crate::mix::Recipe;
use crate::net::SimNet;

pub(crate) use data::be_u64;
pub(crate) use discovery::service_path;
pub(crate) use recorder::{Op, Recorder, Records};

/// The nodes every world creates before its processes start: `/world`, and the nodes the
/// holders of each recipe write under their fencing tokens.
pub(crate) const SETUP_PATHS: [&str; 6] =
    ["/world", terms::DATA, terms::LATCH_DATA, terms::RACE_DATA, terms::RW_DATA, data::CONFIG];
/// The subtree the cache processes cache.
pub(crate) const CONFIG: &str = data::CONFIG;
/// The counter's node.
pub(crate) const COUNTER: &str = data::COUNTER;
/// The queue's node.
pub(crate) const QUEUE: &str = data::QUEUE;
/// A pause's longest, in session timeouts: past the session's expiry.
pub(crate) const PAUSE_TIMEOUTS_MAX: u64 = 2;
/// The pause before a process tries again after a failed acquire.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// One life of a process: a session, then the recipe's loop, forever. Ends when its task is
/// aborted (the process crashed).
pub(crate) async fn life(
    recipe: Recipe,
    process: usize,
    net: Arc<SimNet>,
    rec: Arc<Recorder>,
    seed: u64,
    session_timeout: Duration,
) {
    let mut rng = fastrand::Rng::with_seed(seed);
    // A process whose first session cannot open (its network black-holed) tries again, as a
    // service's start-up would: a world must not lose a process for good to one fault.
    let (session, options) = loop {
        match open(process, &net, &rec, &mut rng, session_timeout).await {
            Some(opened) => break opened,
            None => tokio::time::sleep(RETRY_PAUSE).await,
        }
    };
    let me = Me { process, rec, rng, session_timeout, net };
    match recipe {
        Recipe::Mutex => terms::hold_mutex(me, &session, options).await,
        Recipe::Semaphore => terms::hold_semaphore(me, &session, options).await,
        Recipe::RwLock => terms::hold_rwlock(me, &session, options).await,
        Recipe::Latch => terms::hold_latch(me, &session, options.common.policy).await,
        Recipe::Race => terms::hold_race(me, &session, options.common.policy).await,
        Recipe::Counter => data::count(me, &session).await,
        Recipe::Queue => data::offer_and_take(me, &session).await,
        Recipe::Cache => data::write_and_cache(me, &session).await,
        Recipe::Discovery => discovery::register_and_follow(me, &session).await,
    }
}

/// A process's own: its number, the recorder, its random source, its session timeout, its
/// network (and through it the server, which the checks read).
struct Me {
    process: usize,
    rec: Arc<Recorder>,
    rng: fastrand::Rng,
    session_timeout: Duration,
    net: Arc<SimNet>,
}

impl Me {
    /// A term that starts valid runs on a node of the session the process has now, the one
    /// its lease is measured on: a node of an earlier session goes when the server expires
    /// that session, on a schedule no lease of this one bounds.
    fn check_owned(&self, l: &Leadership, session: &Session) {
        let current = session.client().ok().map(|c| c.session_id());
        let owner = self.net.server().owner_of(l.node_path());
        let Some(owner) = owner.filter(|_| l.is_valid()) else { return };
        if current.is_some_and(|c| c.0 != owner) {
            self.net.server().report(format!(
                "p{} holds {:#x} on {}, a node of session {owner:#x}, while its session is {:#x}",
                self.process,
                l.token().0,
                l.node_path(),
                current.map_or(0, |c| c.0)
            ));
        }
    }

    /// A release that returned `Ok` left no node behind on the session it still has:
    /// `release()` answers once the delete is done (a node of a session that has since been
    /// replaced is that session's to take, on the server's schedule).
    fn check_released(&self, l: &Leadership, session: &Session) {
        let current = session.client().ok().map(|c| c.session_id());
        if current != Some(l.session_id()) {
            return;
        }
        if self.net.server().owner_of(l.node_path()) == Some(l.session_id().0) {
            self.net.server().report(format!(
                "p{} released {:#x}, and its node {} was still there",
                self.process,
                l.token().0,
                l.node_path()
            ));
        }
    }

    /// After an acquire of `lock` given up at `since_ms` (world time), a session that stayed
    /// healthy throughout holds no node there once the withdrawal had its time: a cancelled
    /// acquire leaves nothing behind (checked only when no fault touched this process or the
    /// server from well before the attempt to the check).
    async fn check_withdrawn(&self, session: &Session, lock: &str, since_ms: u64) {
        tokio::time::sleep(Duration::from_millis(terms::WITHDRAW_MS)).await;
        let quiet_from = since_ms
            .saturating_sub(terms::QUIET_TIMEOUTS * self.session_timeout.as_millis() as u64);
        let Ok(client) = session.client() else { return };
        if !self.rec.quiet_since(self.process, quiet_from) || !client.state().is_connected() {
            return;
        }
        let sid = client.session_id().0;
        let left = self.net.server().ephemerals_under(sid, &format!("{lock}/"));
        if !left.is_empty() {
            self.net.server().report(format!(
                "p{} gave up an acquire at {since_ms} ms, and session {sid:#x} still has {left:?}",
                self.process
            ));
        }
    }

    /// Notes `what` in the trace, as this process.
    fn note(&self, what: impl std::fmt::Display) {
        self.rec.note(format!("p{} {what}", self.process));
    }

    /// A short random pause between two rounds of a recipe's loop.
    async fn breathe(&mut self) {
        tokio::time::sleep(Duration::from_millis(self.rng.u64(0..20))).await;
    }
}

/// Acquires with `acquire` until it succeeds, noting each failure.
async fn until_ok<T, F>(me: &Me, acquire: impl Fn() -> F) -> T
where
    F: std::future::Future<Output = Result<T, rzk_recipes::Error>>,
{
    loop {
        match acquire().await {
            Ok(held) => return held,
            Err(e) => me.note(format_args!("acquire failed: {e}")),
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// Opens a process's session over `net`, and draws its recipe's connection policy: half the
/// lives keep their holds through a disconnect, bounded by the lease alone.
async fn open(
    process: usize,
    net: &Arc<SimNet>,
    rec: &Recorder,
    rng: &mut fastrand::Rng,
    session_timeout: Duration,
) -> Option<(Session, MutexOptions)> {
    let config = SessionConfig::new("world:2181")
        .with_session_timeout(session_timeout)
        .with_transport(net.clone());
    let session = match Session::connect(config).await {
        Ok(s) => s,
        Err(e) => {
            rec.note(format!("p{process} cannot connect: {e}"));
            return None;
        }
    };
    let mut options = MutexOptions::default();
    if rng.bool() {
        options.common.policy = ConnectionPolicy::StepDownOnLost;
    }
    rec.note(format!("p{process} starts, {:?}", options.common.policy));
    Some((session, options))
}
