//! The lock recipes behind one handle, for the scenarios that run each of them in-process:
//! the same `--recipe` names as the participant process (`mutex`, `read`, `write`,
//! `semaphore:N`).

use std::time::Duration;

use rzk_recipes::{
    lock::{
        InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphore, LockGuard,
        MutexOptions, SemaphoreLease,
    },
    session::{Session, SessionConfig},
    Error, Leadership,
};

use super::checker::Checker;

/// A handle of one lock recipe.
#[derive(Clone)]
pub enum Locker {
    /// The mutex, or a side of the read-write lock.
    Mutex(InterProcessMutex),
    Semaphore(InterProcessSemaphore),
}

/// How many may hold `recipe` at once (a reader: as many as there are; counted as one here,
/// since the scenarios pair a reader with writers).
pub fn holders(recipe: &str) -> usize {
    recipe.strip_prefix("semaphore:").map_or(1, |n| n.parse().expect("semaphore:N"))
}

impl Locker {
    pub fn new(session: &Session, path: &str, recipe: &str) -> Result<Locker, Error> {
        let options = MutexOptions::default().with_id(recipe);
        Ok(match recipe {
            "mutex" => Locker::Mutex(InterProcessMutex::new(session, path, options)?),
            "read" | "write" => {
                let rw = InterProcessReadWriteLock::new(session, path, options)?;
                let side = if recipe == "read" { rw.read_lock() } else { rw.write_lock() };
                Locker::Mutex(side.clone())
            }
            _ => {
                let n = holders(recipe) as u32;
                Locker::Semaphore(InterProcessSemaphore::new(session, path, n, options)?)
            }
        })
    }

    /// The path its nodes queue under: the lock path, or a semaphore's internal mutex's.
    pub fn queue_path(path: &str, recipe: &str) -> String {
        match recipe {
            "mutex" | "read" | "write" => path.to_string(),
            _ => format!("{path}/locks"),
        }
    }

    pub async fn acquire(&self) -> Result<Hold, Error> {
        Ok(match self {
            Locker::Mutex(m) => Hold::Lock(m.acquire().await?),
            Locker::Semaphore(s) => Hold::Lease(s.acquire().await?),
        })
    }

    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Hold>, Error> {
        Ok(match self {
            Locker::Mutex(m) => m.acquire_timeout(timeout).await?.map(Hold::Lock),
            Locker::Semaphore(s) => s.acquire_timeout(timeout).await?.map(Hold::Lease),
        })
    }
}

/// A granted hold, with its term; dropped, it is released.
#[derive(Debug)]
pub enum Hold {
    Lock(LockGuard),
    Lease(SemaphoreLease),
}

impl std::ops::Deref for Hold {
    type Target = Leadership;

    fn deref(&self) -> &Leadership {
        match self {
            Hold::Lock(g) => g.leadership(),
            Hold::Lease(l) => l,
        }
    }
}

impl Hold {
    pub async fn release(self) -> Result<(), Error> {
        match self {
            Hold::Lock(g) => g.release().await,
            Hold::Lease(l) => l.release().await,
        }
    }
}

/// One locker per recipe on `path`, each on a session of its own with `config`.
pub async fn lockers(
    config: &SessionConfig,
    path: &str,
    recipes: &[&str],
) -> (Vec<Session>, Vec<Locker>) {
    let mut sessions = Vec::new();
    let mut lockers = Vec::new();
    for recipe in recipes {
        let s = Session::connect(config.clone()).await.expect("connect");
        lockers.push(Locker::new(&s, path, recipe).unwrap());
        sessions.push(s);
    }
    (sessions, lockers)
}

/// Each locker acquires in turn; each hold is recorded by `checker` (as "0", "1", ...).
pub async fn hold_each<'a>(
    lockers: impl IntoIterator<Item = &'a Locker>,
    checker: &Checker,
) -> Vec<Hold> {
    let mut holds = Vec::new();
    for (i, l) in lockers.into_iter().enumerate() {
        let hold = tokio::time::timeout(Duration::from_secs(10), l.acquire()).await;
        let hold = hold.expect("holds").unwrap();
        checker.record(&format!("{i}"), &hold);
        holds.push(hold);
    }
    holds
}

/// How many leaves a lock path has while its holders hold and `waiters` wait: a node each,
/// and a semaphore's first waiter (holding the internal mutex) its lease node too.
pub fn leaves_with(recipe: &str, waiters: usize) -> usize {
    let lease = usize::from(recipe.starts_with("semaphore:") && waiters > 0);
    holders(recipe) + waiters + lease
}

/// Starts an acquire of `locker` in a task; returns once `path` has `queued` leaves.
pub async fn queue(
    locker: &Locker,
    client: &rzk_client::Client,
    path: &str,
    queued: usize,
) -> tokio::task::JoinHandle<Result<Hold, Error>> {
    let task = tokio::spawn({
        let l = locker.clone();
        async move { l.acquire().await }
    });
    let start = std::time::Instant::now();
    while leaves(client, path).await.len() < queued {
        assert!(start.elapsed() < Duration::from_secs(8), "never queued below {path}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    task
}

/// Every node below `path` that has no children (what a lock leaves behind; the containers
/// above them are the server's to reap), as paths relative to `path`.
pub async fn leaves(client: &rzk_client::Client, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![String::new()];
    while let Some(rel) = todo.pop() {
        let children = match client.list_children(&format!("{path}{rel}")).await {
            Ok(c) => c,
            Err(rzk_client::Error::NoNode) => continue,
            Err(e) => panic!("list {path}{rel}: {e}"),
        };
        if children.is_empty() && !rel.is_empty() {
            out.push(rel.trim_start_matches('/').to_string());
        }
        todo.extend(children.into_iter().map(|c| format!("{rel}/{c}")));
    }
    out.sort();
    out
}

/// Waits (at most 8 s) until the leaves below `path` are `expected`.
pub async fn wait_leaves(client: &rzk_client::Client, path: &str, expected: &[&str]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(8);
    loop {
        let now = leaves(client, path).await;
        if now == expected {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "below {path}: {now:?}, not {expected:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
