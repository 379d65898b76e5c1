//! One election participant in its own process, for the multi-process tests
//! (docs/election.md §4.2) and for trying the crate by hand:
//!
//! ```text
//! cargo run -p rzk-recipes --bin rzk-recipes-participant -- \
//!     --connect 127.0.0.1:2181 --path /demo/leader --id a \
//!     [--recipe latch|selector|race|mutex|read|write|semaphore:N|queue|curator-queue:LOCK] \
//!     [--policy suspended|lost] [--session-timeout-ms 4000] [--witness /demo/witness] \
//!     [--work-ms 0]
//! ```
//!
//! It joins, and while it leads (holds the lock, the read or write side of the read-write
//! lock, or one of the semaphore's N leases) it writes `"<id>|<token>|<n>"` to the witness node
//! every 50 ms with a guarded write. A lock recipe releases on loss and acquires again. It
//! prints one line per event on stdout:
//!
//! ```text
//! joined <node>            (a semaphore: joined <semaphore path>, before its first acquire)
//! elected <token> <node>
//! lease <ms until the deadline>
//! write ok <token> <mzxid> | write refused <reason> | write unknown
//! lost <reason>
//! ```
//!
//! With `--recipe queue` it is a consumer of the SimpleDistributedQueue at `--path` instead: it
//! takes items one after another and prints each before the next take, so that a `kill -9`
//! between a take's delete and its line is the only way a taken item goes unrecorded:
//!
//! ```text
//! joined <queue path>
//! took <item, as UTF-8>
//! take unknown <error>     (the delete's reply was lost: the item may be gone)
//! take failed <error>      (nothing was removed)
//! ```
//!
//! With `--recipe curator-queue:LOCK` it consumes the Curator `DistributedQueue` at `--path`
//! under the lock path `LOCK`, processing each node for `--work-ms` (so that a `kill -9` can
//! land mid-processing, where the node must survive for another consumer):
//!
//! ```text
//! joined <queue path>
//! processing <the node's items, as UTF-8, space-separated>
//! took <the same items>    (processed and deleted)
//! take failed <error>
//! ```

use std::time::Duration;

use std::future::Future;

use rzk_client::MultiWriteResult;
use rzk_recipes::queue::DistributedQueue;
use rzk_recipes::{
    election::{
        ConnectionPolicy, Contender, LatchOptions, LeaderLatch, LeaderSelector, RaceElection,
        RaceOptions, SelectorOptions,
    },
    lock::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphore, MutexOptions},
    queue::SimpleDistributedQueue,
    session::{Session, SessionConfig},
    Error, Leadership,
};

struct Args {
    connect: String,
    path: String,
    id: String,
    recipe: String,
    policy: ConnectionPolicy,
    timeout: Duration,
    witness: Option<String>,
    work: Duration,
}

fn args() -> Args {
    let mut a = Args {
        connect: "127.0.0.1:2181".into(),
        path: "/demo/leader".into(),
        id: String::new(),
        recipe: "latch".into(),
        policy: ConnectionPolicy::StepDownOnSuspended,
        timeout: Duration::from_secs(4),
        witness: None,
        work: Duration::ZERO,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--connect" => a.connect = v,
            "--path" => a.path = v,
            "--id" => a.id = v,
            "--recipe" => a.recipe = v,
            "--policy" => {
                a.policy = match v.as_str() {
                    "lost" => ConnectionPolicy::StepDownOnLost,
                    _ => ConnectionPolicy::StepDownOnSuspended,
                }
            }
            "--session-timeout-ms" => a.timeout = Duration::from_millis(v.parse().expect("ms")),
            "--witness" => a.witness = Some(v),
            "--work-ms" => a.work = Duration::from_millis(v.parse().expect("ms")),
            _ => panic!("unknown argument {k}"),
        }
    }
    a
}

fn say(line: String) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Writes to the witness every 50 ms until the term is lost.
async fn lead(l: Leadership, id: String, witness: Option<String>) {
    say(format!("elected {} {}", l.token(), l.node_path()));
    let mut n = 0u64;
    loop {
        let left = l.deadline().saturating_duration_since(std::time::Instant::now());
        say(format!("lease {}", left.as_millis()));
        if let Some(w) = &witness {
            n += 1;
            let data = format!("{id}|{}|{n}", l.token());
            let r = match l.guarded() {
                Ok(mut g) => {
                    let _ = g.set_data(w, data.as_bytes(), None);
                    g.commit().await
                }
                Err(e) => Err(e),
            };
            match r {
                Ok(results) => {
                    let mzxid = match results.first() {
                        Some(MultiWriteResult::SetData { stat }) => stat.mzxid,
                        _ => -1,
                    };
                    say(format!("write ok {} {mzxid}", l.token()));
                }
                Err(e) if e.is_not_leader() => say(format!("write refused {e}")),
                Err(e) => say(format!("write unknown {e}")),
            }
        }
        tokio::select! {
            biased;
            reason = l.lost() => {
                say(format!("lost {reason:?}"));
                return;
            }
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

/// The lock recipes, from `--recipe`.
enum Lock {
    Mutex,
    Read,
    Write,
    Semaphore(u32),
}

impl Lock {
    fn parse(recipe: &str) -> Option<Lock> {
        Some(match recipe {
            "mutex" => Lock::Mutex,
            "read" => Lock::Read,
            "write" => Lock::Write,
            _ => Lock::Semaphore(recipe.strip_prefix("semaphore:")?.parse().ok()?),
        })
    }
}

/// Holds `lock` again and again: acquire, lead while held, release on loss.
async fn hold_lock(session: &Session, a: &Args, lock: Lock) -> Result<(), Error> {
    let options = MutexOptions::default().with_id(&a.id).with_policy(a.policy);
    let mutex = match lock {
        Lock::Mutex => InterProcessMutex::new(session, &a.path, options)?,
        Lock::Read | Lock::Write => {
            let rw = InterProcessReadWriteLock::new(session, &a.path, options)?;
            let side = if matches!(lock, Lock::Read) { rw.read_lock() } else { rw.write_lock() };
            side.clone()
        }
        Lock::Semaphore(n) => {
            let semaphore = InterProcessSemaphore::new(session, &a.path, n, options)?;
            say(format!("joined {}", a.path));
            return hold_each(a, || async {
                let lease = semaphore.acquire().await?;
                let leadership = Leadership::clone(&lease);
                Ok((lease, leadership))
            })
            .await;
        }
    };
    tokio::spawn(announce_join(Contender::clone(&mutex)));
    hold_each(a, || async {
        let guard = mutex.acquire().await?;
        let leadership = guard.leadership().clone();
        Ok((guard, leadership))
    })
    .await
}

/// Prints `joined <node>` once the recipe has queued its node.
async fn announce_join(contender: Contender) {
    loop {
        if let Some(p) = contender.our_path() {
            return say(format!("joined {p}"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Each hold `acquire` grants is led until lost, then released (its guard dropped).
async fn hold_each<G, F, Fut>(a: &Args, mut acquire: F) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(G, Leadership), Error>>,
{
    loop {
        let (guard, leadership) = acquire().await?;
        lead(leadership, a.id.clone(), a.witness.clone()).await;
        drop(guard);
    }
}

/// Takes items from the queue at `--path` until the session is closed, one line per take.
async fn consume(session: &Session, a: &Args) -> Result<(), Error> {
    let queue = SimpleDistributedQueue::new(session, &a.path)?;
    say(format!("joined {}", a.path));
    loop {
        match queue.take().await {
            Ok(item) => say(format!("took {}", String::from_utf8_lossy(&item))),
            Err(Error::Closed) => return Err(Error::Closed),
            Err(e) if e.is_indeterminate() => say(format!("take unknown {e}")),
            Err(e) => say(format!("take failed {e}")),
        }
    }
}

/// Consumes the Curator queue at `--path` under `lock_path`, one line per step.
async fn consume_curator(session: &Session, a: &Args, lock_path: &str) -> Result<(), Error> {
    let queue = DistributedQueue::new(session, &a.path)?.with_lock_path(lock_path)?;
    say(format!("joined {}", a.path));
    loop {
        let work = a.work;
        let processed = queue.consume(|items| async move {
            let items: Vec<_> =
                items.iter().map(|i| String::from_utf8_lossy(i).into_owned()).collect();
            say(format!("processing {}", items.join(" ")));
            tokio::time::sleep(work).await;
            Ok::<_, std::convert::Infallible>(items)
        });
        match processed.await {
            Ok(Ok(items)) => say(format!("took {}", items.join(" "))),
            Ok(Err(never)) => match never {},
            Err(Error::Closed) => return Err(Error::Closed),
            Err(e) => say(format!("take failed {e}")),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let a = args();
    let session =
        Session::connect(SessionConfig::new(&a.connect).with_session_timeout(a.timeout)).await?;
    if let Some(lock) = Lock::parse(&a.recipe) {
        hold_lock(&session, &a, lock).await?;
    } else if a.recipe == "queue" {
        consume(&session, &a).await?;
    } else if let Some(lock_path) = a.recipe.strip_prefix("curator-queue:") {
        consume_curator(&session, &a, lock_path).await?;
    } else if a.recipe == "selector" {
        let sel = LeaderSelector::new(
            &session,
            &a.path,
            SelectorOptions::default().with_id(&a.id).with_policy(a.policy).with_auto_requeue(true),
        )?;
        let (id, witness) = (a.id.clone(), a.witness.clone());
        sel.start(move |l| {
            let (id, witness) = (id.clone(), witness.clone());
            async move {
                // The future is dropped when the term is lost; `lead` also watches lost().
                lead(l, id, witness).await;
                std::future::pending::<()>().await;
                Ok(())
            }
        })?;
        announce_join(Contender::clone(&sel)).await;
        std::future::pending::<()>().await;
    } else if a.recipe == "race" {
        let options = RaceOptions::default().with_id(&a.id).with_policy(a.policy);
        let race = RaceElection::new(&session, &a.path, options)?;
        race.start().await?;
        // No node of its own until it wins: "joined" means the first round is decided.
        say(format!("joined {}", a.path));
        loop {
            let l = race.await_leadership().await?;
            lead(l, a.id.clone(), a.witness.clone()).await;
        }
    } else {
        let latch = LeaderLatch::new(
            &session,
            &a.path,
            LatchOptions::default().with_id(&a.id).with_policy(a.policy),
        )?;
        let joined = latch.start().await?;
        say(format!("joined {}", joined.node));
        loop {
            let l = latch.await_leadership().await?;
            lead(l, a.id.clone(), a.witness.clone()).await;
        }
    }
    Ok(())
}
