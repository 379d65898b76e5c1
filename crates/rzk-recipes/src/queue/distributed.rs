//! Curator's `DistributedQueue`: one PERSISTENT_SEQUENTIAL child `queue-<10-digit sequence>`
//! per `put` or `putMulti`, its data Curator's item envelope (`envelope.rs`), taken
//! lowest first; with a lock path, each node is processed under an EPHEMERAL lock node
//! `<lock path>/<node name>` and deleted only once processed.

use std::future::Future;
use std::time::Duration;

use rzk_client::{Acls, Client, CreateMode, OneshotWatcher};
use tokio::sync::oneshot;

use crate::naming;
use crate::queue::envelope;
use crate::queue::item_lock::{woken_before, LockNode, Releases};
use crate::queue::layout::{self as queue, Checked, Layout};
use crate::queue::simple::{SimpleDistributedQueue, Wait};
use crate::queue::unread::Unread;
use crate::session::ops;
use crate::session::Session;
use crate::zk_error::{classify, Class, ZkError};
use crate::Error;

/// The name prefix of a queue node (Curator's `DistributedQueue.QUEUE_ITEM_NAME`).
pub(crate) const ITEM_PREFIX: &str = "queue-";

/// Curator's layout: envelopes under a PERSISTENT queue path (Curator's `start()` creates it
/// so, its parents as containers).
const LAYOUT: Layout =
    Layout { prefix: ITEM_PREFIX, check: envelope::check, path_mode: CreateMode::Persistent };

/// What happens to a node whose processing failed under a lock path (Curator's `ErrorMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ErrorMode {
    /// Queued again at the tail, in one transaction with the delete: it is delivered again.
    /// The default, as Curator's.
    #[default]
    Requeue,
    /// Deleted, as if it had been processed.
    Delete,
}

/// A distributed queue in the layout of Curator's `DistributedQueue`
/// (`QueueBuilder.builder(client, consumer, serializer, path)`): `<path>/queue-<10-digit
/// sequence>` nodes whose data is Curator's envelope of one or more items, so Java and Rust
/// producers and consumers share one queue. The items are the bytes of Curator's
/// `QueueSerializer`: the application on either side agrees on their encoding.
///
/// Without a lock path, delivery is at most once, as Curator documents: a take reads and
/// deletes a node and only then returns its items, so they are lost to the application when
/// the delete's reply is lost or the process dies before it has processed them.
///
/// With a lock path ([`DistributedQueue::with_lock_path`], Curator's `lockPath`), delivery is
/// at least once: [`DistributedQueue::consume`] creates the EPHEMERAL lock node
/// `<lock path>/<node name>` (a node whose lock exists is skipped: another consumer has it),
/// processes the items, and only then deletes the node (or queues it again after a failure,
/// as [`ErrorMode`] says) and its lock. A consumer that dies or whose session ends while
/// processing leaves the node in place, and another consumer gets it once the lock node is
/// gone with that session; so an item may be processed more than once, never lost.
///
/// A `queue-` node whose data is not an envelope is reported as [`Error::BadData`] by the take
/// that meets it and left in place for an operator (Curator's consumer logs and deletes it);
/// the handle skips it from then on. Children of other names are skipped.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{queue::DistributedQueue, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let queue = DistributedQueue::new(&session, "/jobs")?.with_lock_path("/jobs-locks")?;
/// queue.put(b"resize 42.png").await?;
/// queue.put_multi([&b"resize 43.png"[..], b"resize 44.png"]).await?;
/// // Processed before it is deleted: a crash here leaves the node for another consumer.
/// let outcome = queue
///     .consume(|items| async move {
///         for item in &items {
///             println!("{}", String::from_utf8_lossy(item));
///         }
///         Ok::<_, std::io::Error>(items.len())
///     })
///     .await?;
/// assert_eq!(outcome.unwrap(), 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DistributedQueue {
    /// The queue's take machinery in Curator's layout, used without a lock path.
    queue: SimpleDistributedQueue,
    lock_path: Option<String>,
    error_mode: ErrorMode,
    /// Lock deletes of this handle left to the background, which its takes wait for.
    releases: Releases,
}

impl std::fmt::Debug for DistributedQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedQueue")
            .field("path", &self.queue.path())
            .field("lock_path", &self.lock_path)
            .finish()
    }
}

/// How a locked node is settled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Deleted for a take, which returns its items.
    Taken,
    /// Deleted after it was processed.
    Processed,
    /// Deleted and queued again at the tail.
    Requeued,
}

/// The answer of a settle task.
type Answer = oneshot::Sender<Result<bool, Error>>;

/// A node locked by this consumer, read and found an envelope.
struct Locked {
    name: String,
    data: Vec<u8>,
    items: Vec<Vec<u8>>,
    client: Client,
    /// Deleted once the node is settled (or in the background, if the lock is given up).
    lock: LockNode,
}

/// What listing the queue came to.
enum Listing {
    /// Its children, with the children watch when the take waits.
    Names(Vec<String>, Option<OneshotWatcher>),
    /// Nothing to take, and the take does not wait.
    Empty,
    /// List again (after a pause, or after creating the queue path).
    Again,
}

/// What an attempt to lock one listed node came to.
enum Attempt {
    Locked(Box<Locked>),
    /// Another consumer holds its lock.
    Busy,
    /// Gone, or bad data reported before: the next one.
    Skip,
    /// A connection or session problem (after a pause): list again.
    Relist,
}

impl DistributedQueue {
    /// A queue at `path` without a lock path (nothing is created before the first operation).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str) -> Result<Self, Error> {
        let queue = SimpleDistributedQueue::with_layout(session, path, LAYOUT)?;
        let error_mode = ErrorMode::default();
        Ok(DistributedQueue { queue, lock_path: None, error_mode, releases: Releases::default() })
    }

    /// The same queue, consumed under the lock path `lock_path` (Curator's
    /// `QueueBuilder.lockPath`): at least once. Every consumer of one queue must use the same
    /// lock path.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path, or the queue path itself.
    pub fn with_lock_path(self, lock_path: &str) -> Result<Self, Error> {
        naming::validate_path(lock_path)?;
        if lock_path == self.queue.path() {
            return Err(Error::BadArguments(format!("lock path {lock_path:?} is the queue path")));
        }
        Ok(DistributedQueue { lock_path: Some(lock_path.to_string()), ..self })
    }

    /// The same queue, treating a failed [`DistributedQueue::consume`] under the lock path as
    /// `mode` says (default: [`ErrorMode::Requeue`]).
    pub fn with_error_mode(self, mode: ErrorMode) -> Self {
        DistributedQueue { error_mode: mode, ..self }
    }

    /// The same queue, creating its nodes with `acls` (default: open to anyone).
    pub fn with_acls(self, acls: Acls<'static>) -> Self {
        DistributedQueue { queue: self.queue.with_acls(acls), ..self }
    }

    /// The queue path.
    pub fn path(&self) -> &str {
        self.queue.path()
    }

    /// The lock path, if any.
    pub fn lock_path(&self) -> Option<&str> {
        self.lock_path.as_deref()
    }

    /// Appends one item (Curator's `put`); returns the name of its node (`queue-<sequence>`).
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] if the reply was lost: the item may or may not be queued.
    /// [`Error::Closed`] once the session is closed; `NoAuth` and other fatal errors as
    /// ZooKeeper names them.
    ///
    /// # Cancellation safety
    /// Dropping the future after the create was sent leaves the same uncertainty as a lost
    /// reply: the item may be queued.
    pub async fn put(&self, item: &[u8]) -> Result<String, Error> {
        self.put_multi([item]).await
    }

    /// Appends `items` as one node (Curator's `putMulti`): they are taken together, in order,
    /// by one consumer. Returns the name of the node.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for an item of 2^31 bytes or more; otherwise as
    /// [`DistributedQueue::put`] (a node larger than the server's `jute.maxbuffer` is refused
    /// by the server).
    ///
    /// # Cancellation safety
    /// As [`DistributedQueue::put`].
    pub async fn put_multi<I>(&self, items: I) -> Result<String, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.queue.offer(&envelope::encode(items)?).await
    }

    /// Removes the head node and returns its items, or `None` if the queue is empty. With a
    /// lock path, nodes another consumer has locked are passed over, and the node is deleted
    /// under its own lock.
    ///
    /// # Errors
    /// [`Error::BadData`] for a head node that is not an envelope (it stays; this handle skips
    /// it from then on). [`Error::ConnectionLoss`] if the reply to the delete was lost: the
    /// node may be gone. With a lock path, [`Error::SessionExpired`] if the session ended
    /// before the delete: the node stays for the next consumer. [`Error::Closed`] once the
    /// session is closed; fatal ZooKeeper errors as named.
    ///
    /// # Cancellation safety
    /// Safe: a node is removed only by the delete that returns its items; if the future is
    /// dropped while that delete is in flight, the items are kept by this handle and returned
    /// by its next take (or queued again at the tail when the last clone is dropped).
    pub async fn poll(&self) -> Result<Option<Vec<Vec<u8>>>, Error> {
        self.take_with(Wait::Never).await
    }

    /// Removes the head node and returns its items, waiting (on a children watch, and with a
    /// lock path on the head's lock node) until there is one.
    ///
    /// # Errors
    /// As [`DistributedQueue::poll`].
    ///
    /// # Cancellation safety
    /// As [`DistributedQueue::poll`]: dropping a waiting take loses nothing.
    pub async fn take(&self) -> Result<Vec<Vec<u8>>, Error> {
        let items = self.take_with(Wait::Until(None)).await?;
        Ok(items.expect("an unbounded take returns a node"))
    }

    /// [`DistributedQueue::take`], giving up after `timeout` with `Ok(None)`.
    /// A delete sent before the timeout is waited for, so that an item it took is returned
    /// and a lost reply is reported: the answer can come that much later.
    ///
    /// # Errors
    /// As [`DistributedQueue::poll`].
    ///
    /// # Cancellation safety
    /// As [`DistributedQueue::poll`].
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Option<Vec<Vec<u8>>>, Error> {
        let deadline = crate::clock::now() + timeout;
        self.queue.until(deadline, self.take_with(Wait::Until(Some(deadline)))).await
    }

    /// Waits for the head node and runs `process` on its items (Curator's `QueueConsumer`).
    /// Returns what `process` returned.
    ///
    /// With a lock path: at least once. The node is locked first and deleted only after
    /// `process` returned `Ok`; after an `Err` it is queued again at the tail
    /// ([`ErrorMode::Requeue`]) or deleted ([`ErrorMode::Delete`]). Without a lock path: at
    /// most once, as Curator's: the node is deleted before `process` runs, and an `Err` changes
    /// nothing.
    ///
    /// # Errors
    /// As [`DistributedQueue::poll`]. With a lock path, also the error of the delete (or
    /// requeue) after `process` when a retry cannot cure it (`NoAuth`): the node stays and is
    /// delivered again. A connection lost during the delete is retried while the session
    /// lives; a session that ended leaves the node to the next consumer.
    ///
    /// # Cancellation safety
    /// Dropping the future before `process` returned leaves the node in the queue (its lock
    /// is deleted in the background), and so does dropping it while it waits for this
    /// handle's earlier deletes to finish; once the delete or requeue has started, it is
    /// finished in the background. Either way the node is processed at least once. Without a
    /// lock path, as [`DistributedQueue::take`] until `process` runs; dropping it then loses
    /// the items.
    pub async fn consume<F, Fut, T, E>(&self, process: F) -> Result<Result<T, E>, Error>
    where
        F: FnOnce(Vec<Vec<u8>>) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let Some(lock_path) = &self.lock_path else {
            return Ok(process(self.take().await?).await);
        };
        let locked = self.lock_next(lock_path, Wait::Until(None)).await?;
        let locked = locked.expect("an unbounded wait returns a node");
        let items = locked.items.clone();
        let outcome = process(items).await;
        let requeue = outcome.is_err() && self.error_mode == ErrorMode::Requeue;
        let settled = if requeue { Settled::Requeued } else { Settled::Processed };
        let _settled = self.settle(locked, settled).await??;
        Ok(outcome)
    }

    /// The number of nodes queued (the `queue-` children, bad ones included, and the nodes
    /// this handle holds for its next take), not the number of items in them.
    ///
    /// # Errors
    /// [`Error::Closed`] once the session is closed; fatal ZooKeeper errors as named.
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn len(&self) -> Result<usize, Error> {
        self.queue.len().await
    }

    /// True when [`DistributedQueue::len`] is 0.
    ///
    /// # Errors
    /// As [`DistributedQueue::len`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len().await? == 0)
    }

    async fn take_with(&self, wait: Wait) -> Result<Option<Vec<Vec<u8>>>, Error> {
        let Some(lock_path) = &self.lock_path else {
            let data = self.queue.take_with(wait).await?;
            return data.map(|data| self.open(&data)).transpose();
        };
        if let Some(data) = self.queue.held().await {
            return self.open(&data).map(Some);
        }
        loop {
            let Some(locked) = self.lock_next(lock_path, wait).await? else { return Ok(None) };
            let items = locked.items.clone();
            if self.settle(locked, Settled::Taken).await?? {
                return Ok(Some(items));
            }
            // Deleted under our lock by a consumer that takes without one: not ours.
        }
    }

    /// The items of an envelope that passed the layout's check.
    fn open(&self, data: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
        let path = self.queue.path().to_string();
        envelope::decode(data).map_err(|reason| Error::BadData { path, reason })
    }

    /// Locks the lowest node no other consumer holds, and reads it; waits for one as `wait`
    /// says.
    async fn lock_next(&self, lock_path: &str, wait: Wait) -> Result<Option<Box<Locked>>, Error> {
        let session = self.queue.session();
        loop {
            self.releases.settled().await;
            let mut states = session.subscribe();
            let client = ops::client(session).await?;
            states.borrow_and_update();
            let (names, watcher) = match self.list(&client, wait).await? {
                Listing::Names(names, watcher) => (names, watcher),
                Listing::Empty => return Ok(None),
                Listing::Again => continue,
            };
            let mut busy = Vec::new();
            let mut relist = false;
            for name in self.queue.unrefused(queue::items(names, ITEM_PREFIX)) {
                match self.try_lock(&client, lock_path, &name).await? {
                    Attempt::Locked(locked) => return Ok(Some(locked)),
                    Attempt::Busy => busy.push(name),
                    Attempt::Skip => {}
                    Attempt::Relist => {
                        relist = true;
                        break;
                    }
                }
            }
            if relist {
                continue;
            }
            let (Wait::Until(deadline), Some(watcher)) = (wait, watcher) else { return Ok(None) };
            let locks = (!busy.is_empty()).then_some((lock_path, busy));
            if !woken_before(&client, watcher, locks, &mut states, deadline).await? {
                return Ok(None);
            }
        }
    }

    /// Lists the queue's children, with a children watch when the take waits.
    async fn list(&self, client: &Client, wait: Wait) -> Result<Listing, Error> {
        let path = self.queue.path();
        let listed = match wait {
            Wait::Never => client.list_children(path).await.map(|n| (n, None)),
            Wait::Until(_) => {
                client.get_and_watch_children(path).await.map(|(n, _, w)| (n, Some(w)))
            }
        };
        match listed {
            Ok((names, watcher)) => Ok(Listing::Names(names, watcher)),
            Err(ZkError::NoNode) if matches!(wait, Wait::Never) => Ok(Listing::Empty),
            // Deleted while we wait: created again, so that a watch can be set.
            Err(ZkError::NoNode) => self.queue.ensure_path(client).await.map(|()| Listing::Again),
            Err(e) => ops::pause_or_fail(e, path).await.map(|()| Listing::Again),
        }
    }

    /// Creates the lock of the node `name` and reads the node.
    async fn try_lock(
        &self,
        client: &Client,
        lock_path: &str,
        name: &str,
    ) -> Result<Attempt, Error> {
        let path = naming::child_path(lock_path, name);
        let acl = self.queue.acls().at(&path);
        let options = CreateMode::Ephemeral.with_acls(acl.acls());
        let lock = loop {
            // Armed before the create is sent: if this future is dropped while the create is
            // in flight, or its reply is lost, a lock it made is deleted in the background.
            let releases = self.releases.clone();
            let mut lock =
                LockNode { client: client.clone(), path: path.clone(), ours: false, releases };
            match client.create(&path, &[], &options).await {
                Ok(_) => {
                    lock.ours = true;
                    break lock;
                }
                Err(ZkError::NodeExists) => {
                    lock.disarm();
                    return Ok(Attempt::Busy);
                }
                Err(ZkError::NoNode) => {
                    lock.disarm();
                    let (mode, acls) = (CreateMode::Persistent, self.queue.acls());
                    queue::ensure_node(client, lock_path, mode, acls).await?;
                }
                Err(e) => {
                    if classify(&e) != Class::ConnectionLoss {
                        lock.disarm();
                    }
                    return ops::pause_or_fail(e, &path).await.map(|()| Attempt::Relist);
                }
            }
        };
        let path = naming::child_path(self.queue.path(), name);
        let (data, stat) = match client.get_data(&path).await {
            Ok(read) => read,
            Err(ZkError::NoNode) => return Ok(Attempt::Skip),
            Err(e) => return ops::pause_or_fail(e, &path).await.map(|()| Attempt::Relist),
        };
        match self.queue.check(name, stat.czxid, &data) {
            Checked::Item => {}
            Checked::Refused(reason) => return Err(Error::BadData { path, reason }),
            Checked::RefusedBefore => return Ok(Attempt::Skip),
        }
        let items = self.open(&data)?;
        let (name, client) = (name.to_string(), client.clone());
        Ok(Attempt::Locked(Box::new(Locked { name, data, items, client, lock })))
    }

    /// Deletes a locked node (in one transaction with its copy at the tail, if
    /// [`Settled::Requeued`]), then its lock, on a task of its own, so that a dropped take or
    /// consume still finishes it; `Err` only if that task failed. The inner result is
    /// [`DistributedQueue::settle_node`]'s. A take's node deleted by us whose answer nobody
    /// reads is held for the handle's next take, which waits for the task.
    async fn settle(
        &self,
        locked: Box<Locked>,
        settled: Settled,
    ) -> Result<Result<bool, Error>, Error> {
        // Taken before the task starts: the next take must not list while it runs.
        let in_flight = self.queue.delete_in_flight().await;
        let (tx, rx) = oneshot::channel();
        // A take's node deleted by the task, its answer unread: held for the next take.
        let keep = (settled == Settled::Taken).then(|| (self.queue.clone(), locked.data.clone()));
        tokio::spawn(self.clone().settle_task(locked, settled, tx, in_flight));
        let answer = Unread::new(rx, move |deleted: Result<bool, Error>| {
            if let (Ok(true), Some((queue, data))) = (deleted, keep) {
                queue.hold(data);
            }
        });
        answer.answer().await.ok_or(Error::Closed)
    }

    async fn settle_task(
        self,
        locked: Box<Locked>,
        settled: Settled,
        done: Answer,
        _in_flight: tokio::sync::OwnedRwLockReadGuard<()>,
    ) {
        let result = self.settle_node(&locked, settled).await;
        // Before the answer, as Curator's: a consumer that returned holds no lock.
        locked.lock.release().await;
        if let (Err(Ok(true)), Settled::Taken) = (done.send(result), settled) {
            self.queue.hold(locked.data);
        }
    }

    /// Deletes (or requeues) a locked node: true once it is gone. A take (`Settled::Taken`)
    /// must know that its own delete removed the node: false when another consumer's delete
    /// came first (one that takes without a lock), [`Error::ConnectionLoss`] when a lost reply
    /// leaves that unknown, [`Error::SessionExpired`] when the session ended with the node
    /// still queued. Processed or requeued, a node gone or left to the next consumer with the
    /// session is settled: at least once.
    async fn settle_node(&self, locked: &Locked, settled: Settled) -> Result<bool, Error> {
        let client = &locked.client;
        let path = naming::child_path(self.queue.path(), &locked.name);
        let tail = naming::child_path(self.queue.path(), ITEM_PREFIX);
        let take = settled == Settled::Taken;
        let mut in_doubt = false;
        loop {
            let result = if settled == Settled::Requeued {
                let mut multi = client.new_multi_writer();
                multi.add_delete(&path, None).map_err(|e| Error::from_zk(e, &path))?;
                let acl = self.queue.acls().at(&tail);
                let sequential = CreateMode::PersistentSequential.with_acls(acl.acls());
                multi
                    .add_create(&tail, &locked.data, &sequential)
                    .map_err(|e| Error::from_zk(e, &tail))?;
                multi.commit().await.map(drop).map_err(ZkError::from)
            } else {
                client.delete(&path, None).await
            };
            match result.map_err(crate::zk_error::normalize) {
                Ok(()) => return Ok(true),
                // Gone: deleted by us (a retry after a lost reply) or by a take without a lock.
                Err(ZkError::NoNode) if !take => return Ok(true),
                Err(ZkError::NoNode) if in_doubt => return Err(Error::ConnectionLoss),
                Err(ZkError::NoNode) => return Ok(false),
                Err(e) => match classify(&e) {
                    Class::ConnectionLoss | Class::Transient => {
                        in_doubt |= classify(&e) == Class::ConnectionLoss;
                        tokio::time::sleep(ops::RETRY_PAUSE).await;
                    }
                    // Our lock went with the session: the node is the next consumer's.
                    Class::SessionEnd if !take => return Ok(true),
                    Class::SessionEnd if in_doubt => return Err(Error::ConnectionLoss),
                    Class::SessionEnd => return Err(Error::SessionExpired),
                    Class::NoNode | Class::Fatal => return Err(Error::from_zk(e, &path)),
                },
            }
        }
    }
}
