//! Who holds a lock and who waits, read from the server, for each lock layout: the mutex, the
//! read-write lock and the semaphore. Read-only: nothing is created or watched.

use crate::driver::participants::read_participants;
use crate::driver::rule::{self, Rule};
use crate::driver::status::Participant;
use crate::lock::{LEASES, LOCKS};
use crate::session::Session;
use crate::{naming, Error};

/// The node layout of a lock path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockLayout {
    /// [`InterProcessMutex`](crate::lock::InterProcessMutex) (and LeaderSelector): `lock-` nodes.
    Mutex,
    /// [`InterProcessReadWriteLock`](crate::lock::InterProcessReadWriteLock): `__READ__` and
    /// `__WRIT__` nodes in one order.
    ReadWrite,
    /// [`InterProcessSemaphore`](crate::lock::InterProcessSemaphore): `leases/` and `locks/`.
    /// `max_leases`, when known, tells held lease nodes from the one still waiting for a
    /// free lease.
    Semaphore {
        /// The number of leases, if known.
        max_leases: Option<u32>,
    },
}

/// What a holder holds, or a waiter waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// The mutex.
    Exclusive,
    /// The read side of a read-write lock.
    Read,
    /// The write side of a read-write lock.
    Write,
    /// A lease of a semaphore.
    Lease,
}

impl LockKind {
    /// `exclusive`, `read`, `write` or `lease`.
    pub fn as_str(self) -> &'static str {
        match self {
            LockKind::Exclusive => "exclusive",
            LockKind::Read => "read",
            LockKind::Write => "write",
            LockKind::Lease => "lease",
        }
    }
}

/// One holder or waiter: its kind and its node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockEntry {
    /// What it holds or waits for.
    pub kind: LockKind,
    /// Its node (a semaphore waiter's is its node in `locks/`).
    pub participant: Participant,
}

/// Who holds a lock and who waits, in node order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockStatus {
    /// The layout read.
    pub layout: LockLayout,
    /// The holders: one for a mutex or a writer, every reader before the first writer, up to
    /// `max_leases` lease holders.
    pub holders: Vec<LockEntry>,
    /// The waiters, first to be served first (a read-write lock's readers after a writer are
    /// served together).
    pub waiters: Vec<LockEntry>,
    /// Children the layout cannot order (a semaphore's as `leases/<name>` or `locks/<name>`).
    pub foreign: Vec<String>,
}

impl LockLayout {
    /// The layout of the nodes under `path`: a semaphore if `leases` or `locks` is a child, a
    /// read-write lock if a `__READ__` or `__WRIT__` node is, a mutex otherwise (also when
    /// `path` does not exist).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path; `ConnectionLoss`, `SessionExpired`, other
    /// ZooKeeper errors.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn detect(session: &Session, path: &str) -> Result<LockLayout, Error> {
        naming::validate_path(path)?;
        let children = match session.client()?.list_children(path).await {
            Ok(c) => c,
            Err(rzk_client::Error::NoNode) => return Ok(LockLayout::Mutex),
            Err(e) => return Err(Error::from_zk(e, path)),
        };
        Ok(if children.iter().any(|c| c == LEASES || c == LOCKS) {
            LockLayout::Semaphore { max_leases: None }
        } else if children.iter().any(|c| rule::WRITE.parse(c).is_some()) {
            LockLayout::ReadWrite
        } else {
            LockLayout::Mutex
        })
    }
}

impl LockStatus {
    /// Reads who holds the lock at `path` of `layout` and who waits (one getChildren and one
    /// multi-read per parent). A path that does not exist has neither.
    ///
    /// Without `max_leases`, a semaphore's newest lease node counts as waiting when the
    /// session that created it holds the internal mutex and created the lease node under it
    /// (Curator's acquirer waits for a free lease holding the mutex); between its grant and
    /// the mutex's release it is shown waiting for a moment.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path; `ConnectionLoss`, `SessionExpired`, other
    /// ZooKeeper errors.
    ///
    /// # Cancellation safety
    /// Safe: read-only.
    pub async fn read(
        session: &Session,
        path: &str,
        layout: LockLayout,
    ) -> Result<LockStatus, Error> {
        naming::validate_path(path)?;
        let status = |(holders, waiters), foreign| LockStatus { layout, holders, waiters, foreign };
        match layout {
            LockLayout::Mutex => {
                let p = read_participants(session, path, &rule::LOCK).await?;
                let kinds = p.list.into_iter().map(|p| (LockKind::Exclusive, p)).collect();
                Ok(status(split_queue(kinds, 1), p.foreign))
            }
            LockLayout::ReadWrite => {
                // Either side's rule orders both kinds of node.
                let p = read_participants(session, path, &rule::READ).await?;
                Ok(status(split_read_write(p.list), p.foreign))
            }
            LockLayout::Semaphore { max_leases } => {
                let leases_path = naming::child_path(path, LEASES);
                let locks_path = naming::child_path(path, LOCKS);
                let leases = read_participants(session, &leases_path, &rule::LEASE).await?;
                let locks = read_participants(session, &locks_path, &rule::LOCK).await?;
                let held = match max_leases {
                    Some(n) => n as usize,
                    None => granted(&leases.list, locks.list.first()),
                };
                let mut holders = leases.list;
                holders.truncate(held);
                let entries = |list: Vec<Participant>| {
                    list.into_iter().map(|p| LockEntry { kind: LockKind::Lease, participant: p })
                };
                let foreign = (leases.foreign.iter().map(|f| format!("{LEASES}/{f}")))
                    .chain(locks.foreign.iter().map(|f| format!("{LOCKS}/{f}")))
                    .collect();
                // A waiting lease node's acquirer is the internal mutex's holder, listed once,
                // as the first waiter.
                Ok(status((entries(holders).collect(), entries(locks.list).collect()), foreign))
            }
        }
    }
}

/// The first `held` entries hold; the rest wait.
fn split_queue(
    mut kinds: Vec<(LockKind, Participant)>,
    held: usize,
) -> (Vec<LockEntry>, Vec<LockEntry>) {
    let entry = |(kind, participant)| LockEntry { kind, participant };
    let waiters = kinds.split_off(held.min(kinds.len())).into_iter().map(entry).collect();
    (kinds.into_iter().map(entry).collect(), waiters)
}

/// A read-write lock's nodes in order: each holds unless a node before it blocks it under its
/// side's rule.
fn split_read_write(list: Vec<Participant>) -> (Vec<LockEntry>, Vec<LockEntry>) {
    // The nodes are sorted by sequence, so the first node of each lock name has the least
    // sequence of its name; `blocks` passes only a node of our own sequence, so a node is
    // blocked by some node before it exactly when it is by the first of that name.
    let mut first_of: Vec<(&'static str, u64)> = Vec::with_capacity(2);
    let (mut holders, mut waiters) = (Vec::new(), Vec::new());
    for participant in list {
        let Some((r, lock)) = rule::READ.parse(naming::name_of(&participant.node)) else {
            continue;
        };
        let sequence = naming::sequence_number(r.sequence);
        let (kind, side): (LockKind, &Rule) = if lock == rule::READ_MARKER {
            (LockKind::Read, &rule::READ)
        } else {
            (LockKind::Write, &rule::WRITE)
        };
        let blocked = first_of.iter().any(|&(l, s)| side.blocks(l, s, sequence));
        if !first_of.iter().any(|&(l, _)| l == lock) {
            first_of.push((lock, sequence));
        }
        let entry = LockEntry { kind, participant };
        if blocked {
            waiters.push(entry);
        } else {
            holders.push(entry);
        }
    }
    (holders, waiters)
}

/// How many of a semaphore's lease nodes (in order) are granted when the number of leases is
/// unknown: all but the newest, if its session holds the internal mutex and created it later.
fn granted(leases: &[Participant], mutex_holder: Option<&Participant>) -> usize {
    let waiting = match (leases.last(), mutex_holder) {
        (Some(newest), Some(holder)) => {
            newest.session == holder.session && newest.token > holder.token
        }
        _ => false,
    };
    leases.len() - usize::from(waiting)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::term::token::FencingToken;
    use rzk_client::SessionId;

    const U: &str = "0f8e2b9a-5c3d-4e1f-8a7b-6c5d4e3f2a1b";

    fn node(lock: &str, seq: u64, session: i64, czxid: i64) -> Participant {
        Participant {
            id: format!("{lock}{seq}"),
            node: format!("/p/_c_{U}-{lock}{seq:010}"),
            token: FencingToken(czxid),
            session: SessionId(session),
            is_leader: false,
        }
    }

    fn kinds(entries: &[LockEntry]) -> Vec<(LockKind, &str)> {
        entries.iter().map(|e| (e.kind, e.participant.id.as_str())).collect()
    }

    #[test]
    fn readers_before_the_first_writer_hold_together() {
        let (r, w) = (rule::READ_MARKER, rule::WRITE_MARKER);
        let list = vec![node(r, 1, 1, 1), node(r, 2, 2, 2), node(w, 3, 3, 3), node(r, 4, 4, 4)];
        let (holders, waiters) = split_read_write(list);
        use LockKind::{Read, Write};
        assert_eq!(kinds(&holders), [(Read, "__READ__1"), (Read, "__READ__2")]);
        assert_eq!(kinds(&waiters), [(Write, "__WRIT__3"), (Read, "__READ__4")]);
    }

    #[test]
    fn a_writer_first_holds_alone_with_its_downgrade() {
        let (r, w) = (rule::READ_MARKER, rule::WRITE_MARKER);
        let list = vec![node(w, 1, 1, 1), node(r, 1, 1, 2), node(r, 2, 2, 3), node(w, 3, 3, 4)];
        let (holders, waiters) = split_read_write(list);
        assert_eq!(holders.len(), 2, "the writer and its downgraded read: {holders:?}");
        assert_eq!(waiters.len(), 2);
    }

    #[test]
    fn the_newest_lease_node_waits_while_its_session_holds_the_mutex() {
        let leases = [node("lease-", 1, 1, 10), node("lease-", 2, 2, 20), node("lease-", 3, 3, 40)];
        let mutex = node("lock-", 1, 3, 30);
        assert_eq!(granted(&leases, Some(&mutex)), 2);
        assert_eq!(granted(&leases, None), 3);
        // An earlier lease of the mutex holder's session is held: it is older than its hold.
        let mutex_later = node("lock-", 1, 3, 50);
        assert_eq!(granted(&leases, Some(&mutex_later)), 3);
    }
}
