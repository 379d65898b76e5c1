//! The processes of the recipes whose holds are terms: locks (mutex, semaphore, read-write
//! lock) and elections (LeaderLatch, race). Each holds, works with guarded writes of its
//! token, and lets go, forever; every term is reported with its `Leadership`.

use std::time::Duration;

use rzk_client::MultiWriteResult;
use rzk_recipes::{
    election::{ConnectionPolicy, LatchOptions, LeaderLatch, RaceElection, RaceOptions},
    lock::{
        InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphore, LockGuard,
        MutexOptions,
    },
    session::Session,
    Leadership,
};

use super::{until_ok, Me, PAUSE_TIMEOUTS_MAX};
use crate::mix::{Recipe, SEMAPHORE_LEASES};

/// The lock every mutex process contends for.
const LOCK: &str = "/world/lock";
/// The node the mutex holders write under their fencing token.
pub(super) const DATA: &str = "/world/data";
/// The semaphore the semaphore processes take leases of.
const SEMAPHORE: &str = "/world/sem";
/// The read-write lock.
const RW_LOCK: &str = "/world/rw";
/// The node its writers write under their fencing token.
pub(super) const RW_DATA: &str = "/world/rw-data";
/// The election the latch processes join.
const LATCH: &str = "/world/latch";
/// The node the latch leaders write under their fencing token.
pub(super) const LATCH_DATA: &str = "/world/latch-data";
/// The race election's node.
const RACE: &str = "/world/race";
/// The node the race's winners write under their fencing token.
pub(super) const RACE_DATA: &str = "/world/race-data";
/// How long a candidate waits to lead, in session timeouts, before it gives up and joins
/// anew (a latch of an expired session may never be elected).
const PATIENCE_TIMEOUTS: u32 = 4;
/// Guarded writes in one hold, at most.
const WRITES_PER_HOLD_MAX: usize = 3;
/// The longest a holder works between two writes.
const WORK_MS_MAX: u64 = 40;
/// How often (percent of writes) a holder stalls before writing, as a process paused by GC
/// or SIGSTOP would, for up to [`PAUSE_TIMEOUTS_MAX`] of its session timeouts.
const PAUSE_PERCENT: u32 = 2;
/// How often (percent of acquires) a mutex process gives an acquire up after a short wait.
const GIVE_UP_PERCENT: u32 = 15;
/// How long such an acquire waits.
const GIVE_UP_AFTER_MS: std::ops::RangeInclusive<u64> = 1..=100;
/// How long a healthy session takes, at most, to withdraw a given-up acquire's node.
pub(super) const WITHDRAW_MS: u64 = 500;
/// How long a process's links and the server must have been free of faults before a
/// given-up acquire, in session timeouts, for its session to count as healthy: long enough
/// to reconnect from any fault before it.
pub(super) const QUIET_TIMEOUTS: u64 = 3;
/// How long a semaphore process keeps a lease, or a reader its read lock: long enough that
/// the holds, not the recipe's internal lock, are what the others wait for.
const LEASE_MS_MIN: u64 = 50;
const LEASE_MS_MAX: u64 = 300;

/// Acquire, work with guarded writes, release, forever; now and then, an acquire given up
/// after a short wait, as a caller with a deadline gives up, and checked to leave no node.
pub(super) async fn hold_mutex(mut me: Me, session: &Session, options: MutexOptions) {
    let mutex = InterProcessMutex::new(session, LOCK, options).expect("the lock path is valid");
    loop {
        let guard = if me.rng.u32(0..100) < GIVE_UP_PERCENT {
            let wait = Duration::from_millis(me.rng.u64(GIVE_UP_AFTER_MS));
            let since = me.rec.now_ms();
            match mutex.acquire_timeout(wait).await {
                Ok(Some(guard)) => guard,
                Ok(None) | Err(_) => {
                    me.check_withdrawn(session, LOCK, since).await;
                    continue;
                }
            }
        } else {
            until_ok(&me, || mutex.acquire()).await
        };
        hold_guard(&mut me, session, guard, Recipe::Mutex, Some(DATA)).await;
        me.breathe().await;
    }
}

/// Acquire a read or a write lock (drawn each time), hold it (a writer with guarded writes),
/// release, forever.
pub(super) async fn hold_rwlock(mut me: Me, session: &Session, options: MutexOptions) {
    let lock = InterProcessReadWriteLock::new(session, RW_LOCK, options)
        .expect("the read-write lock path is valid");
    loop {
        let reading = me.rng.bool();
        let side = if reading { lock.read_lock() } else { lock.write_lock() };
        let guard = until_ok(&me, || side.acquire()).await;
        let writes = (!reading).then_some(RW_DATA);
        hold_guard(&mut me, session, guard, Recipe::RwLock, writes).await;
        me.breathe().await;
    }
}

/// One hold of a lock's guard: reported, worked (guarded writes to `data`, or a while's wait
/// for a shared hold), released, and its release checked.
async fn hold_guard(
    me: &mut Me,
    session: &Session,
    guard: LockGuard,
    recipe: Recipe,
    data: Option<&str>,
) {
    let leadership = guard.leadership().clone();
    let term = me.rec.started(recipe, data.is_none(), me.process, &leadership);
    me.check_owned(&leadership, session);
    match data {
        Some(data) => work(me, &leadership, recipe, data).await,
        None => hold_while_valid(me, &leadership).await,
    }
    me.rec.ended(term);
    if guard.release().await.is_ok() {
        me.check_released(&leadership, session);
    }
}

/// Acquire a lease, hold it a while, release, forever.
pub(super) async fn hold_semaphore(mut me: Me, session: &Session, options: MutexOptions) {
    let semaphore = InterProcessSemaphore::new(session, SEMAPHORE, SEMAPHORE_LEASES, options)
        .expect("the semaphore path is valid");
    loop {
        let lease = until_ok(&me, || semaphore.acquire()).await;
        let leadership = Leadership::clone(&lease);
        let term = me.rec.started(Recipe::Semaphore, false, me.process, &leadership);
        me.check_owned(&leadership, session);
        hold_while_valid(&mut me, &leadership).await;
        me.rec.ended(term);
        if lease.release().await.is_ok() {
            me.check_released(&leadership, session);
        }
        me.breathe().await;
    }
}

/// Keeps a hold a while, as its holder uses it, and lets go at once if it is lost first: the
/// release then runs while whatever took the hold (a disconnect) is still under way.
async fn hold_while_valid(me: &mut Me, leadership: &Leadership) {
    let hold = Duration::from_millis(me.rng.u64(LEASE_MS_MIN..=LEASE_MS_MAX));
    tokio::select! {
        biased;
        _ = leadership.lost() => {}
        () = tokio::time::sleep(hold) => {}
    }
}

/// Join the election with a new latch, lead, work with guarded writes, resign (close the
/// latch), forever. Each latch leads at most once: a latch that resumes its node after a
/// step-down would lead again with the same token, which is not a new term.
pub(super) async fn hold_latch(mut me: Me, session: &Session, policy: ConnectionPolicy) {
    let patience = me.session_timeout * PATIENCE_TIMEOUTS;
    loop {
        let mut options = LatchOptions::default().with_id(format!("p{}", me.process));
        options.common.policy = policy;
        let latch = LeaderLatch::new(session, LATCH, options).expect("the latch path is valid");
        match latch.start().await {
            Err(e) => me.note(format_args!("cannot join: {e}")),
            Ok(_) => {
                let led = latch.await_leadership_timeout(patience).await;
                lead(&mut me, session, led, Recipe::Latch, LATCH_DATA, patience).await;
            }
        }
        let _ = latch.close().await;
        me.breathe().await;
    }
}

/// Race for the node with a new candidate, lead, work with guarded writes, close, forever.
pub(super) async fn hold_race(mut me: Me, session: &Session, policy: ConnectionPolicy) {
    let patience = me.session_timeout * PATIENCE_TIMEOUTS;
    loop {
        let mut options = RaceOptions::default().with_id(format!("p{}", me.process));
        options.common.policy = policy;
        let race = RaceElection::new(session, RACE, options).expect("the race path is valid");
        match race.start().await {
            Err(e) => me.note(format_args!("cannot race: {e}")),
            Ok(()) => {
                let led = race.await_leadership_timeout(patience).await;
                lead(&mut me, session, led, Recipe::Race, RACE_DATA, patience).await;
            }
        }
        let _ = race.close().await;
        me.breathe().await;
    }
}

/// One election's outcome: a term worked with guarded writes to `data`, or a note.
async fn lead(
    me: &mut Me,
    session: &Session,
    led: Result<Option<Leadership>, rzk_recipes::Error>,
    recipe: Recipe,
    data: &str,
    patience: Duration,
) {
    match led {
        Ok(Some(leadership)) => {
            let term = me.rec.started(recipe, false, me.process, &leadership);
            me.check_owned(&leadership, session);
            work(me, &leadership, recipe, data).await;
            me.rec.ended(term);
        }
        Ok(None) => me.note(format_args!("not elected in {patience:?}")),
        Err(e) => me.note(format_args!("election failed: {e}")),
    }
}

/// A term's work: up to [`WRITES_PER_HOLD_MAX`] guarded writes of its token to `data`, with
/// work before each (and, now and then, one long pause in the term); it stops at the term's
/// loss or the first write that fails.
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
            me.note(format_args!("pauses {pause} ms before a write"));
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
