//! The world's client processes: each runs real rzk-recipes code on its own session over its
//! own [`SimNet`], and reports what it believed and what the server acknowledged to the
//! [`Recorder`].

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_client::MultiWriteResult;
use rzk_recipes::{
    ConnectionPolicy, InterProcessMutex, InterProcessSemaphore, Leadership, MutexOptions, Session,
    SessionConfig,
};

use crate::checks::{Recipe, Term, SEMAPHORE_LEASES};
use crate::net::SimNet;

/// The lock every mutex process contends for.
pub(crate) const LOCK: &str = "/world/lock";
/// The semaphore the semaphore processes take leases of.
pub(crate) const SEMAPHORE: &str = "/world/sem";
/// The node the holders write under their fencing token.
pub(crate) const DATA: &str = "/world/data";
/// Guarded writes in one hold, at most.
const WRITES_PER_HOLD_MAX: usize = 3;
/// The longest a holder works between two writes.
const WORK_MS_MAX: u64 = 40;
/// How often (percent of writes) a holder stalls before writing, as a process paused by GC
/// or SIGSTOP would, for up to twice its session timeout.
const PAUSE_PERCENT: u32 = 2;
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

#[derive(Default)]
pub(crate) struct Records {
    pub terms: Vec<Term>,
    /// `(mzxid, token)` of every acknowledged guarded write.
    pub writes: Vec<(i64, i64)>,
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

    fn wrote(&self, mzxid: i64, token: i64) {
        self.lock().writes.push((mzxid, token));
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
    let Some((session, options)) = open(process, net, &rec, &mut rng, session_timeout).await else {
        return;
    };
    let me = Me { process, rec, rng, session_timeout };
    match recipe {
        Recipe::Mutex => hold_mutex(me, &session, options).await,
        Recipe::Semaphore => hold_semaphore(me, &session, options).await,
    }
}

/// A process's own: its number, the recorder, its random source, its session timeout.
struct Me {
    process: usize,
    rec: Arc<Recorder>,
    rng: fastrand::Rng,
    session_timeout: Duration,
}

/// Acquire, work with guarded writes, release, forever.
async fn hold_mutex(me: Me, session: &Session, options: MutexOptions) {
    let Me { process, rec, mut rng, session_timeout } = me;
    let mutex = InterProcessMutex::new(session, LOCK, options).expect("the lock path is valid");
    loop {
        let guard = until_ok(process, &rec, || mutex.acquire()).await;
        let token = guard.token().0;
        let term = rec.started(Recipe::Mutex, process, guard.leadership());
        for _ in 0..rng.usize(1..=WRITES_PER_HOLD_MAX) {
            tokio::time::sleep(Duration::from_millis(rng.u64(0..=WORK_MS_MAX))).await;
            if !guard.is_valid() {
                break;
            }
            if rng.u32(0..100) < PAUSE_PERCENT {
                let pause = rng.u64(0..=2 * session_timeout.as_millis() as u64);
                rec.note(format!("p{process} pauses {pause} ms before a write"));
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            let Ok(mut w) = guard.guarded() else { break };
            w.set_data(DATA, &token.to_be_bytes(), None).expect("a valid set");
            match w.commit().await {
                Ok(results) => {
                    if let Some(MultiWriteResult::SetData { stat }) = results.last() {
                        rec.wrote(stat.mzxid, token);
                    }
                }
                Err(_) => break,
            }
        }
        rec.ended(term);
        let _ = guard.release().await;
        tokio::time::sleep(Duration::from_millis(rng.u64(0..20))).await;
    }
}

/// Acquire a lease, hold it a while, release, forever.
async fn hold_semaphore(me: Me, session: &Session, options: MutexOptions) {
    let Me { process, rec, mut rng, .. } = me;
    let semaphore = InterProcessSemaphore::new(session, SEMAPHORE, SEMAPHORE_LEASES, options)
        .expect("the semaphore path is valid");
    loop {
        let lease = until_ok(process, &rec, || semaphore.acquire()).await;
        let term = rec.started(Recipe::Semaphore, process, &lease);
        tokio::time::sleep(Duration::from_millis(rng.u64(LEASE_MS_MIN..=LEASE_MS_MAX))).await;
        rec.ended(term);
        let _ = lease.release().await;
        tokio::time::sleep(Duration::from_millis(rng.u64(0..20))).await;
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
    net: Arc<SimNet>,
    rec: &Recorder,
    rng: &mut fastrand::Rng,
    session_timeout: Duration,
) -> Option<(Session, MutexOptions)> {
    let config =
        SessionConfig::new("world:2181").with_session_timeout(session_timeout).with_transport(net);
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
