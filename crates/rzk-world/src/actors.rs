//! The world's client processes: each runs real rzk-recipes code on its own session over its
//! own [`SimNet`], and reports what it believed and what the server acknowledged to the
//! [`Recorder`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_client::MultiWriteResult;
use rzk_recipes::{
    ConnectionPolicy, InterProcessMutex, InterProcessSemaphore, LatchOptions, LeaderLatch,
    Leadership, MutexOptions, Session, SessionConfig,
};

use crate::checks::{Recipe, Term, SEMAPHORE_LEASES};
use crate::net::SimNet;

/// The lock every mutex process contends for.
pub(crate) const LOCK: &str = "/world/lock";
/// The semaphore the semaphore processes take leases of.
pub(crate) const SEMAPHORE: &str = "/world/sem";
/// The node the mutex holders write under their fencing token.
pub(crate) const DATA: &str = "/world/data";
/// The election the latch processes join.
pub(crate) const LATCH: &str = "/world/latch";
/// The node the latch leaders write under their fencing token.
pub(crate) const LATCH_DATA: &str = "/world/latch-data";
/// How long a latch waits to lead, in session timeouts, before it gives up and joins anew
/// (a latch of an expired session may never be elected).
const LATCH_PATIENCE_TIMEOUTS: u32 = 4;
/// Guarded writes in one hold, at most.
const WRITES_PER_HOLD_MAX: usize = 3;
/// The longest a holder works between two writes.
const WORK_MS_MAX: u64 = 40;
/// How often (percent of writes) a holder stalls before writing, as a process paused by GC
/// or SIGSTOP would, for up to [`PAUSE_TIMEOUTS_MAX`] of its session timeouts.
const PAUSE_PERCENT: u32 = 2;
/// A pause's longest, in session timeouts: past the session's expiry.
pub(crate) const PAUSE_TIMEOUTS_MAX: u64 = 2;
/// How long a semaphore process keeps a lease: long enough that its leases, not the
/// semaphore's internal lock, are what the others wait for.
const LEASE_MS_MIN: u64 = 50;
const LEASE_MS_MAX: u64 = 300;
/// The pause before a process tries again after a failed acquire.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// What the processes saw, shared by the world's tasks.
pub(crate) struct Recorder {
    start: Instant,
    inner: Mutex<Records>,
}

/// An acknowledged guarded write: by a holder of `recipe`, under `token`, at `mzxid`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Write {
    pub recipe: Recipe,
    pub mzxid: i64,
    pub token: i64,
}

#[derive(Default)]
pub(crate) struct Records {
    pub terms: Vec<Term>,
    /// Every acknowledged guarded write.
    pub writes: Vec<Write>,
    /// What happened, in order, with the world's time: the replay's record.
    pub trace: Vec<String>,
    /// The leadership of each term still running, by the term's index.
    running: Vec<(usize, Leadership)>,
}

impl Recorder {
    /// A recorder whose milliseconds count from `origin`, the world's start.
    pub fn new(origin: Instant) -> Arc<Recorder> {
        Arc::new(Recorder { start: origin, inner: Mutex::new(Records::default()) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        self.inner.lock().expect("a world task panicked holding the records")
    }

    /// Milliseconds of world time at `at`.
    pub fn ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_millis() as u64
    }

    /// Milliseconds of world time now.
    pub fn now_ms(&self) -> u64 {
        self.ms(rzk_now())
    }

    /// Appends a line to the trace.
    pub fn note(&self, line: String) {
        let ms = self.now_ms();
        self.lock().trace.push(format!("{ms:>7} {line}"));
    }

    fn started(&self, recipe: Recipe, process: usize, leadership: &Leadership) -> usize {
        let start_ms = self.now_ms();
        let token = leadership.token().0;
        let mut r = self.lock();
        r.terms.push(Term { recipe, process, token, start_ms, end_ms: None });
        r.trace.push(format!("{start_ms:>7} p{process} holds {recipe:?} {token:#x}"));
        let i = r.terms.len() - 1;
        r.running.push((i, leadership.clone()));
        i
    }

    /// Ends the term at index `i` where its holder stopped believing in it: the recipe's
    /// loss signal or lease deadline, or now, whichever came first.
    fn ended(&self, i: usize) {
        let now = rzk_now();
        let mut r = self.lock();
        let Some(k) = r.running.iter().position(|(j, _)| *j == i) else { return };
        let (_, l) = r.running.swap_remove(k);
        let end_ms = self.ms(l.lost_at().unwrap_or(now).min(l.deadline()).min(now));
        r.terms[i].end_ms = Some(end_ms);
        let line = format!("{end_ms:>7} p{} ends {:#x}", r.terms[i].process, r.terms[i].token);
        r.trace.push(line);
    }

    /// `process` died: its running terms end (at their loss, if the recipe saw one first).
    pub fn crashed(&self, process: usize) {
        let held: Vec<usize> = {
            let r = self.lock();
            r.running.iter().map(|(i, _)| *i).filter(|&i| r.terms[i].process == process).collect()
        };
        for i in held {
            self.ended(i);
        }
    }

    fn wrote(&self, recipe: Recipe, mzxid: i64, token: i64) {
        self.lock().writes.push(Write { recipe, mzxid, token });
    }

    /// Puts taken records back, so that a failure can report their trace.
    pub fn restore(&self, records: Records) {
        *self.lock() = records;
    }

    /// Takes the records, at the end of a run.
    pub fn take(&self) -> Records {
        std::mem::take(&mut *self.lock())
    }

    /// Holds of `recipe` started so far.
    pub fn holds(&self, recipe: Recipe) -> usize {
        self.lock().terms.iter().filter(|t| t.recipe == recipe).count()
    }
}

/// The clock the recipes read (tokio's, paused in the world).
fn rzk_now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// One life of a process: a session, then the recipe's loop, forever. Ends when its task is
/// aborted (the process crashed) or its session cannot open.
pub(crate) async fn life(
    recipe: Recipe,
    process: usize,
    net: Arc<SimNet>,
    rec: Arc<Recorder>,
    seed: u64,
    session_timeout: Duration,
) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let Some((session, options)) = open(process, &net, &rec, &mut rng, session_timeout).await
    else {
        return;
    };
    let me = Me { process, rec, rng, session_timeout, net };
    match recipe {
        Recipe::Mutex => hold_mutex(me, &session, options).await,
        Recipe::Semaphore => hold_semaphore(me, &session, options).await,
        Recipe::Latch => hold_latch(me, &session, options.common.policy).await,
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
}

/// Acquire, work with guarded writes, release, forever.
async fn hold_mutex(mut me: Me, session: &Session, options: MutexOptions) {
    let mutex = InterProcessMutex::new(session, LOCK, options).expect("the lock path is valid");
    loop {
        let guard = until_ok(me.process, &me.rec, || mutex.acquire()).await;
        let term = me.rec.started(Recipe::Mutex, me.process, guard.leadership());
        me.check_owned(guard.leadership(), session);
        work(&mut me, guard.leadership(), Recipe::Mutex, DATA).await;
        me.rec.ended(term);
        let leadership = guard.leadership().clone();
        if guard.release().await.is_ok() {
            me.check_released(&leadership, session);
        }
        tokio::time::sleep(Duration::from_millis(me.rng.u64(0..20))).await;
    }
}

/// Join the election with a new latch, lead, work with guarded writes, resign (close the
/// latch), forever. Each latch leads at most once: a latch that resumes its node after a
/// step-down would lead again with the same token, which is not a new term.
async fn hold_latch(mut me: Me, session: &Session, policy: ConnectionPolicy) {
    let patience = me.session_timeout * LATCH_PATIENCE_TIMEOUTS;
    loop {
        let mut options = LatchOptions::default().with_id(format!("p{}", me.process));
        options.common.policy = policy;
        let latch = LeaderLatch::new(session, LATCH, options).expect("the latch path is valid");
        match latch.start().await {
            Err(e) => me.rec.note(format!("p{} cannot join: {e}", me.process)),
            Ok(_) => match latch.await_leadership_timeout(patience).await {
                Ok(Some(leadership)) => {
                    let term = me.rec.started(Recipe::Latch, me.process, &leadership);
                    me.check_owned(&leadership, session);
                    work(&mut me, &leadership, Recipe::Latch, LATCH_DATA).await;
                    me.rec.ended(term);
                }
                Ok(None) => me.rec.note(format!("p{} not elected in {patience:?}", me.process)),
                Err(e) => me.rec.note(format!("p{} election failed: {e}", me.process)),
            },
        }
        let _ = latch.close().await;
        tokio::time::sleep(Duration::from_millis(me.rng.u64(0..20))).await;
    }
}

/// A term's work: up to [`WRITES_PER_HOLD_MAX`] guarded writes of its token to `data`, with
/// work before each (and, now and then, one long pause in the term); it stops at the term's loss or the
/// first write that fails.
async fn work(me: &mut Me, leadership: &Leadership, recipe: Recipe, data: &str) {
    let token = leadership.token().0;
    let mut paused = false;
    for _ in 0..me.rng.usize(1..=WRITES_PER_HOLD_MAX) {
        tokio::time::sleep(Duration::from_millis(me.rng.u64(0..=WORK_MS_MAX))).await;
        if !leadership.is_valid() {
            break;
        }
        // One pause a term at most, so that a term outlasts a calm only when the recipe
        // keeps it: the world's calm is longer than one pause.
        if !paused && me.rng.u32(0..100) < PAUSE_PERCENT {
            paused = true;
            let pause = me.rng.u64(0..=PAUSE_TIMEOUTS_MAX * me.session_timeout.as_millis() as u64);
            me.rec.note(format!("p{} pauses {pause} ms before a write", me.process));
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        let Ok(mut w) = leadership.guarded() else { break };
        w.set_data(data, &token.to_be_bytes(), None).expect("a valid set");
        match w.commit().await {
            Ok(results) => {
                if let Some(MultiWriteResult::SetData { stat }) = results.last() {
                    me.rec.wrote(recipe, stat.mzxid, token);
                }
            }
            Err(_) => break,
        }
    }
}

/// Acquire a lease, hold it a while, release, forever.
async fn hold_semaphore(mut me: Me, session: &Session, options: MutexOptions) {
    let semaphore = InterProcessSemaphore::new(session, SEMAPHORE, SEMAPHORE_LEASES, options)
        .expect("the semaphore path is valid");
    loop {
        let lease = until_ok(me.process, &me.rec, || semaphore.acquire()).await;
        let term = me.rec.started(Recipe::Semaphore, me.process, &lease);
        me.check_owned(&lease, session);
        let hold = me.rng.u64(LEASE_MS_MIN..=LEASE_MS_MAX);
        tokio::time::sleep(Duration::from_millis(hold)).await;
        me.rec.ended(term);
        let leadership = Leadership::clone(&lease);
        if lease.release().await.is_ok() {
            me.check_released(&leadership, session);
        }
        tokio::time::sleep(Duration::from_millis(me.rng.u64(0..20))).await;
    }
}

/// Acquires with `acquire` until it succeeds, noting each failure.
async fn until_ok<T, F>(process: usize, rec: &Recorder, acquire: impl Fn() -> F) -> T
where
    F: std::future::Future<Output = Result<T, rzk_recipes::Error>>,
{
    loop {
        match acquire().await {
            Ok(held) => return held,
            Err(e) => rec.note(format!("p{process} acquire failed: {e}")),
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
