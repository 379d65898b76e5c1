//! `rzk lock PATH -- CMD`: run a command only while holding a lock (a mutex, one side of a
//! read-write lock, or a lease of a semaphore). `rzk lock --status` is [`crate::lock_status`].
//!
//! The command runs under [`crate::supervise`], as `rzk elect`'s does: the same kill rule,
//! watchdog and limits.

use std::time::Duration;

use clap::Args;
use rzk_recipes::{
    lock::{
        InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphore, LockGuard, LockLayout,
        MutexOptions, SemaphoreLease, SemaphoreOptions,
    },
    Leadership,
};

use crate::connect::Connect;
use crate::error::CliError;
use crate::lock_status;
use crate::supervise::{guarantee, SessionFlags, StopSignals, Supervisor, TermEnd};

/// The exit status when `--timeout-ms` passed without the lock.
pub(crate) const TIMED_OUT: u8 = 3;
/// The exit status when the lock was lost while the command ran (the command was stopped).
pub(crate) const LOST: u8 = 4;
/// The exit status when the command exited 0 but the lock's release failed.
pub(crate) const RELEASE_FAILED: u8 = 5;

/// What `rzk lock` guarantees about its command and how it exits, for `--help`.
macro_rules! lock_help {
    () => {
        concat!(
            "The command runs only while the lock is held, with RZK_FENCING_TOKEN (the lock node's
czxid, strictly increasing per path) and RZK_LOCK_PATH in its environment; the lock is released
when it exits.

",
            guarantee!("rzk lock", "holder"),
            "

Exit status: the command's; 3 if --timeout-ms passed without the lock (no node is left); 4 if
the lock was lost and the command stopped; 5 if the command exited 0 but the release failed (the
lock node then goes when rzk lock's session closes); 130 or 143 on SIGINT or SIGTERM; 2 for a
usage or connection error."
        )
    };
}

/// Flags of `rzk lock`.
#[derive(Debug, Args)]
#[command(after_long_help = lock_help!())]
pub(crate) struct LockArgs {
    /// The lock path, shared by every process that takes the lock.
    path: String,
    /// Give up after this long without the lock, exit with status 3.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// This holder's id, the lock node's data, which `--status` and `rzk ui` show (default:
    /// this host's address, as Curator writes it).
    #[arg(long, conflicts_with = "status")]
    id: Option<String>,
    /// Take one of N leases of a semaphore (Curator's InterProcessSemaphoreV2 layout); with
    /// --status, the first N lease nodes are the holders.
    #[arg(long, value_name = "N", conflicts_with_all = ["read", "write"])]
    semaphore: Option<u32>,
    /// Take the read side of a read-write lock (shared with other readers).
    #[arg(long, conflicts_with = "write")]
    read: bool,
    /// Take the write side of a read-write lock (exclusive).
    #[arg(long)]
    write: bool,
    /// Print who holds the lock and who waits, instead of running a command. The layout (mutex,
    /// read-write lock, semaphore) is read from the path's nodes unless a flag names it.
    #[arg(long, conflicts_with_all = ["timeout_ms", "command"])]
    status: bool,
    /// With --status: one JSON object, {"path", "layout", "max_leases", "holders": [...],
    /// "waiters": [...], "foreign": [...]}, each holder and waiter {"kind", "id", "token",
    /// "node", "session"}.
    #[arg(long, requires = "status")]
    json: bool,
    #[command(flatten)]
    session: SessionFlags,
    /// The command and its arguments.
    #[arg(last = true, required_unless_present = "status", num_args = 1..)]
    command: Vec<String>,
}

/// The handle a lock is taken through.
enum Handle {
    Mutex(InterProcessMutex),
    ReadWrite(InterProcessReadWriteLock, bool),
    Semaphore(InterProcessSemaphore),
}

/// A held lock: a guard of a mutex (or one side of a read-write lock), or a semaphore lease.
enum Held {
    Guard(LockGuard),
    Lease(SemaphoreLease),
}

impl Held {
    fn term(&self) -> &Leadership {
        match self {
            Held::Guard(g) => g.leadership(),
            Held::Lease(l) => l,
        }
    }

    async fn release(self) -> Result<(), rzk_recipes::Error> {
        match self {
            Held::Guard(g) => g.release().await,
            Held::Lease(l) => l.release().await,
        }
    }
}

impl Handle {
    fn open(
        session: &rzk_recipes::session::Session,
        a: &LockArgs,
        budget: Duration,
    ) -> Result<Handle, CliError> {
        let bad = |e: rzk_recipes::Error| CliError::usage(format!("{}: {e}", a.path));
        let acls = crate::acl::recipe_acls(a.session.acl.as_ref());
        let mut opts = MutexOptions::default().with_stop_budget(budget).with_acls(acls);
        if let Some(id) = &a.id {
            opts = opts.with_id(id.clone());
        }
        Ok(if let Some(n) = a.semaphore {
            let opts: SemaphoreOptions = opts;
            Handle::Semaphore(InterProcessSemaphore::new(session, &a.path, n, opts).map_err(bad)?)
        } else if a.read || a.write {
            Handle::ReadWrite(
                InterProcessReadWriteLock::new(session, &a.path, opts).map_err(bad)?,
                a.read,
            )
        } else {
            Handle::Mutex(InterProcessMutex::new(session, &a.path, opts).map_err(bad)?)
        })
    }

    /// Takes the lock, or `None` once `timeout` passed.
    async fn acquire(&self, timeout: Option<Duration>) -> Result<Option<Held>, rzk_recipes::Error> {
        let mutex = match self {
            Handle::Semaphore(s) => {
                return match timeout {
                    None => s.acquire().await.map(|l| Some(Held::Lease(l))),
                    Some(t) => Ok(s.acquire_timeout(t).await?.map(Held::Lease)),
                }
            }
            Handle::Mutex(m) => m,
            Handle::ReadWrite(rw, true) => rw.read_lock(),
            Handle::ReadWrite(rw, false) => rw.write_lock(),
        };
        match timeout {
            None => mutex.acquire().await.map(|g| Some(Held::Guard(g))),
            Some(t) => Ok(mutex.acquire_timeout(t).await?.map(Held::Guard)),
        }
    }

    async fn close(self) {
        let _ = match self {
            Handle::Mutex(m) => m.close().await,
            Handle::ReadWrite(rw, _) => rw.close().await,
            Handle::Semaphore(_) => Ok(()),
        };
    }
}

/// Runs `rzk lock`; returns the exit status.
pub(crate) async fn run(connect: &Connect, a: LockArgs) -> Result<u8, CliError> {
    if a.status {
        return lock_status::print(connect, &a.path, named_layout(&a), a.json).await.map(|()| 0);
    }
    let sup = Supervisor::open("rzk lock", connect, &a.session).await?;
    let handle = Handle::open(&sup.session, &a, sup.budget())?;
    let mut stop_signals = StopSignals::new()?;
    let timeout = a.timeout_ms.map(Duration::from_millis);
    let held = tokio::select! {
        h = handle.acquire(timeout) => h.map_err(|e| CliError::usage(format!("lock {}: {e}", a.path)))?,
        code = stop_signals.recv() => {
            handle.close().await;
            sup.say("stopped by a signal before holding the lock");
            return Ok(code);
        }
    };
    let Some(held) = held else {
        handle.close().await;
        sup.say(format_args!("{} not acquired within {} ms", a.path, a.timeout_ms.unwrap_or(0)));
        return Ok(TIMED_OUT);
    };
    let token = held.term().token();
    sup.say(format_args!("holding {} with token {token}; starting {:?}", a.path, a.command));
    let envs = [("RZK_FENCING_TOKEN", token.to_string()), ("RZK_LOCK_PATH", a.path.clone())];
    let end = sup.run_term(&a.command, &envs, held.term(), "the lock", &mut stop_signals).await?;
    let released = held.release().await;
    handle.close().await;
    if let Err(e) = &released {
        sup.say(format_args!("releasing {} failed: {e}; the node goes with the session", a.path));
    }
    Ok(match end {
        TermEnd::Exited(code) if released.is_err() => {
            sup.say(format_args!("command exited with status {code}; the release failed"));
            if code == 0 {
                RELEASE_FAILED
            } else {
                code
            }
        }
        TermEnd::Exited(code) => {
            sup.say(format_args!("command exited with status {code}; released"));
            code
        }
        TermEnd::Lost => LOST,
        TermEnd::Signalled(code) => {
            sup.say("stopped by a signal; command stopped; released");
            code
        }
    })
}

/// The layout the flags name, if any.
fn named_layout(a: &LockArgs) -> Option<LockLayout> {
    if let Some(n) = a.semaphore {
        Some(LockLayout::Semaphore { max_leases: Some(n) })
    } else if a.read || a.write {
        Some(LockLayout::ReadWrite)
    } else {
        None
    }
}
