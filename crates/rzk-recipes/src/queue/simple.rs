//! ZooKeeper's own queue recipe, as Curator's `SimpleDistributedQueue`: one PERSISTENT_SEQUENTIAL
//! child `qn-<10-digit sequence>` per item, the item's bytes as its data, taken lowest first.
//! Its take machinery also serves Curator's `DistributedQueue` (`distributed.rs`), whose
//! names and data differ (`layout.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rzk_client::{Acls, Client, CreateMode, OneshotWatcher};

use crate::session::acl_provider::NodeAcls;
use tokio::sync::{oneshot, RwLock};

use crate::naming;
use crate::queue::layout::{ensure_node, items, Checked, Layout, SIMPLE};
use crate::queue::unread::Unread;
use crate::session::ops;
use crate::session::Session;
use crate::zk_error::ZkError;
use crate::Error;

/// Listed names found gone in a row after which a take lists again: the rest of the listing
/// was likely taken by other consumers meanwhile, and one listing costs less than a read per
/// name.
const GONE_BEFORE_RELIST: usize = 4;

/// A distributed FIFO queue in the layout of ZooKeeper's recipe and Curator's
/// `SimpleDistributedQueue` (`<path>/qn-<10-digit sequence>`, raw bytes), so Java and Rust
/// producers and consumers share one queue.
///
/// Each item is taken by exactly one consumer: only the delete that removes an item returns
/// it. Consumers take the lowest sequence first; one that loses the race for an item moves to
/// the next. The queue path is created as needed, as containers (Curator's
/// `EnsurePathContainers`), and created again if it is deleted while a consumer waits.
/// Children not named `qn-...` are skipped, as Curator does.
///
/// Where the recipe cannot give more: an [`offer`](SimpleDistributedQueue::offer) or a take
/// that fails with [`Error::ConnectionLoss`] may or may not have happened (the write's reply
/// was lost); nothing is retried behind the caller's back, so nothing is duplicated.
///
/// Delivery to the application is therefore at most once, as Curator documents: an item is
/// taken when a consumer's delete succeeds, no item is taken twice, and none disappears
/// without such a delete, but an item is lost to the application when that delete's reply is
/// lost, or when the consumer's process dies after the delete and before it has recorded or
/// processed the item.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{queue::SimpleDistributedQueue, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let queue = SimpleDistributedQueue::new(&session, "/jobs")?;
/// queue.offer(b"resize 42.png").await?;
/// let job = queue.take().await?;
/// assert_eq!(job, b"resize 42.png");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SimpleDistributedQueue {
    inner: Arc<QueueState>,
}

struct QueueState {
    session: Session,
    path: String,
    acls: NodeAcls,
    layout: Layout,
    /// Items this handle removed for a take that was dropped before it could return them:
    /// the next take of this handle returns them first.
    returned: Mutex<VecDeque<Vec<u8>>>,
    /// Held (shared) by each delete in flight; a take waits for them first, so that an item
    /// whose take was dropped is returned before any later one.
    deletes: Arc<RwLock<()>>,
    /// The names of this handle's last listing that no take has tried yet: the next takes
    /// try them before listing again.
    listing: Mutex<Listing>,
    /// Items whose data failed the layout's check, by name, with the `czxid` of the node
    /// reported: skipped from then on (a new node under the same name is read again).
    bad: Mutex<HashMap<String, i64>>,
}

impl QueueState {
    fn new(session: Session, path: String, acls: NodeAcls, layout: Layout) -> Arc<QueueState> {
        Arc::new(QueueState {
            session,
            path,
            acls,
            layout,
            returned: Mutex::default(),
            deletes: Arc::default(),
            listing: Mutex::default(),
            bad: Mutex::default(),
        })
    }
}

/// Item names from one listing not tried yet, lowest first, and the listing's `pzxid` (the
/// zxid of the last child change it saw).
///
/// Reusing them keeps the order: sequence numbers grow with creation, so any item lower than
/// a listed one was created before the listing, and is in it unless it was already gone.
/// Only a queue path deleted and created again starts its numbers over; a node found under a
/// listed name with a `czxid` after `pzxid` is such a new item, and the listing is dropped.
#[derive(Default)]
struct Listing {
    names: VecDeque<String>,
    pzxid: i64,
}

impl std::fmt::Debug for SimpleDistributedQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimpleDistributedQueue").field("path", &self.inner.path).finish()
    }
}

/// What an attempt to remove one item came to.
enum Removed {
    /// Deleted by us: ours to return.
    Item(Vec<u8>),
    /// Another consumer took it first.
    Gone,
    /// Nothing was removed, and the listing is no longer of use (a connection or session
    /// problem, or a new item under a listed name): list again.
    Relist,
    /// The item's data failed the layout's check (first seen by this handle): left in place.
    Bad(String),
}

/// What listing the queue came to.
enum Listed {
    /// Items were listed, for the take to try.
    Items,
    /// No item; the children watch, if the take waits.
    Nothing(Option<OneshotWatcher>),
    /// List again (after a pause, or after creating the queue path).
    Again,
}

/// How a take waits for an item.
#[derive(Clone, Copy)]
pub(crate) enum Wait {
    /// Return at once when there is nothing to take.
    Never,
    /// Wait for an item, until the deadline if there is one.
    Until(Option<Instant>),
}

impl SimpleDistributedQueue {
    /// A queue at `path` (nothing is created before the first operation).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, path: &str) -> Result<Self, Error> {
        SimpleDistributedQueue::with_layout(session, path, SIMPLE)
    }

    /// A queue at `path` whose items are laid out as `layout` says.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub(crate) fn with_layout(
        session: &Session,
        path: &str,
        layout: Layout,
    ) -> Result<Self, Error> {
        naming::validate_path(path)?;
        let acls = NodeAcls::new(session, None);
        let inner = QueueState::new(session.clone(), path.to_string(), acls, layout);
        Ok(SimpleDistributedQueue { inner })
    }

    /// The same queue, creating its nodes with `acls` (default: the session's
    /// [`crate::session::AclProvider`]).
    pub fn with_acls(self, acls: Acls<'static>) -> Self {
        let inner = &self.inner;
        let given = inner.acls.clone().given(acls);
        let inner = QueueState::new(inner.session.clone(), inner.path.clone(), given, inner.layout);
        SimpleDistributedQueue { inner }
    }

    /// The ACLs its nodes are created with.
    pub(crate) fn acls(&self) -> &NodeAcls {
        &self.inner.acls
    }

    /// The session it works on.
    pub(crate) fn session(&self) -> &Session {
        &self.inner.session
    }

    /// Keeps the data of an item removed for a take that was dropped: the next take of this
    /// handle returns it first (or it is queued again when the last clone is dropped).
    pub(crate) fn hold(&self, data: Vec<u8>) {
        self.inner.returned.lock().expect("poisoned").push_back(data);
    }

    /// Held by a delete in flight whose item, should its take be dropped, is given to
    /// [`SimpleDistributedQueue::hold`]: [`SimpleDistributedQueue::held`] waits for it.
    pub(crate) async fn delete_in_flight(&self) -> tokio::sync::OwnedRwLockReadGuard<()> {
        self.inner.deletes.clone().read_owned().await
    }

    /// The oldest item [`SimpleDistributedQueue::hold`] kept, once no delete of this handle is
    /// in flight.
    pub(crate) async fn held(&self) -> Option<Vec<u8>> {
        drop(self.inner.deletes.write().await);
        self.inner.returned.lock().expect("poisoned").pop_front()
    }

    /// The item names of a listing (sorted) without those whose data this handle found bad:
    /// they stay in the queue, and a take that tried them again would only spin. Bad names
    /// no longer listed are forgotten.
    pub(crate) fn unrefused(&self, names: Vec<String>) -> Vec<String> {
        let mut bad = self.inner.bad.lock().expect("poisoned");
        if bad.is_empty() {
            return names;
        }
        bad.retain(|name, _| names.binary_search(name).is_ok());
        names.into_iter().filter(|name| !bad.contains_key(name)).collect()
    }

    /// The layout's check of the data of the node `name` created at `czxid`.
    pub(crate) fn check(&self, name: &str, czxid: i64, data: &[u8]) -> Checked {
        let Err(reason) = (self.inner.layout.check)(data) else { return Checked::Item };
        let mut bad = self.inner.bad.lock().expect("poisoned");
        match bad.insert(name.to_string(), czxid) {
            Some(seen) if seen == czxid => Checked::RefusedBefore,
            _ => Checked::Refused(reason),
        }
    }

    /// The queue path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Appends an item; returns the name of its node (`qn-<sequence>`).
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] if the reply was lost: the item may or may not be queued.
    /// [`Error::Closed`] once the session is closed; `NoAuth` and other fatal errors as
    /// ZooKeeper names them.
    ///
    /// # Cancellation safety
    /// Dropping the future after the create was sent leaves the same uncertainty as a lost
    /// reply: the item may be queued.
    pub async fn offer(&self, item: &[u8]) -> Result<String, Error> {
        let inner = &self.inner;
        let prefix = naming::child_path(&inner.path, inner.layout.prefix);
        let acl = inner.acls.at(&prefix);
        let options = CreateMode::PersistentSequential.with_acls(acl.acls());
        loop {
            let client = ops::client(&inner.session).await?;
            match client.create(&prefix, item, &options).await {
                Ok((_, seq)) => return Ok(format!("{}{seq}", inner.layout.prefix)),
                Err(ZkError::NoNode) => self.ensure_path(&client).await?,
                Err(e) => ops::write_failed(e, &prefix).await?,
            }
        }
    }

    /// Removes and returns the head of the queue, or `None` if it is empty (Curator's `poll()`).
    ///
    /// # Errors
    /// [`Error::ConnectionLoss`] if the reply to the delete was lost: the item may be gone.
    /// [`Error::Closed`] once the session is closed; fatal ZooKeeper errors as named.
    ///
    /// # Cancellation safety
    /// Safe: an item is removed only by the delete that returns it; if the future is dropped
    /// while that delete is in flight, the item is kept by this handle and returned by its
    /// next take, before any other (or offered again at the tail when the last clone of the handle is dropped).
    pub async fn poll(&self) -> Result<Option<Vec<u8>>, Error> {
        self.take_with(Wait::Never).await
    }

    /// Removes and returns the head of the queue, waiting (on a children watch) until there is
    /// one (Curator's `take()`).
    ///
    /// # Errors
    /// As [`SimpleDistributedQueue::poll`].
    ///
    /// # Cancellation safety
    /// As [`SimpleDistributedQueue::poll`]: dropping a waiting take loses nothing.
    pub async fn take(&self) -> Result<Vec<u8>, Error> {
        let item = self.take_with(Wait::Until(None)).await?;
        Ok(item.expect("an unbounded take returns an item"))
    }

    /// [`SimpleDistributedQueue::take`], giving up after `timeout` with `Ok(None)` (Curator's
    /// `poll(timeout, unit)`).
    /// A delete sent before the timeout is waited for, so that an item it took is returned
    /// and a lost reply is reported: the answer can come that much later.
    ///
    /// # Errors
    /// As [`SimpleDistributedQueue::poll`].
    ///
    /// # Cancellation safety
    /// As [`SimpleDistributedQueue::poll`].
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Option<Vec<u8>>, Error> {
        let deadline = crate::clock::now() + timeout;
        self.until(deadline, self.take_with(Wait::Until(Some(deadline)))).await
    }

    /// Runs `take` until `deadline` (which also bounds its waits for a connection), then
    /// `Ok(None)`, but never while a delete of this handle is in flight: only that delete's
    /// answer says whether its item was taken (a lost reply is an unknown take, reported as
    /// [`Error::ConnectionLoss`], not an empty queue), so the take goes on until it is in.
    /// A request's own timeout bounds that.
    pub(crate) async fn until<T>(
        &self,
        deadline: Instant,
        take: impl std::future::Future<Output = Result<Option<T>, Error>>,
    ) -> Result<Option<T>, Error> {
        tokio::pin!(take);
        if let Ok(r) = tokio::time::timeout_at(deadline.into(), &mut take).await {
            return r;
        }
        loop {
            if self.inner.deletes.try_write().is_ok() {
                // Nothing in flight: dropping the take loses nothing.
                return Ok(None);
            }
            tokio::select! {
                biased;
                r = &mut take => return r,
                _ = self.inner.deletes.write() => {}
            }
        }
    }

    /// The head of the queue without removing it, or `None` if it is empty.
    ///
    /// # Errors
    /// [`Error::Closed`] once the session is closed; fatal ZooKeeper errors as named.
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn peek(&self) -> Result<Option<Vec<u8>>, Error> {
        drop(self.inner.deletes.write().await);
        if let Some(item) = self.inner.returned.lock().expect("poisoned").front() {
            return Ok(Some(item.clone()));
        }
        loop {
            let client = ops::client(&self.inner.session).await?;
            let names = match client.list_children(&self.inner.path).await {
                Ok(names) => items(names, self.inner.layout.prefix),
                Err(ZkError::NoNode) => return Ok(None),
                Err(e) => {
                    ops::pause_or_fail(e, &self.inner.path).await?;
                    continue;
                }
            };
            for name in names {
                let path = naming::child_path(&self.inner.path, &name);
                match client.get_data(&path).await {
                    Ok((data, _)) => return Ok(Some(data)),
                    Err(ZkError::NoNode) => continue,
                    Err(e) => return Err(Error::from_zk(e, &path)),
                }
            }
            return Ok(None);
        }
    }

    /// The number of items queued (the `qn-` children, and the items this handle holds for
    /// its next take).
    ///
    /// # Errors
    /// As [`SimpleDistributedQueue::peek`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn len(&self) -> Result<usize, Error> {
        let held = self.inner.returned.lock().expect("poisoned").len();
        loop {
            let client = ops::client(&self.inner.session).await?;
            match client.list_children(&self.inner.path).await {
                Ok(names) => return Ok(held + items(names, self.inner.layout.prefix).len()),
                Err(ZkError::NoNode) => return Ok(held),
                Err(e) => ops::pause_or_fail(e, &self.inner.path).await?,
            }
        }
    }

    /// True when [`SimpleDistributedQueue::len`] is 0.
    ///
    /// # Errors
    /// As [`SimpleDistributedQueue::peek`].
    pub async fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len().await? == 0)
    }

    pub(crate) async fn take_with(&self, wait: Wait) -> Result<Option<Vec<u8>>, Error> {
        let inner = &self.inner;
        loop {
            if let Some(item) = self.held().await {
                return Ok(Some(item));
            }
            let mut states = inner.session.subscribe();
            let client = ops::client(&inner.session).await?;
            states.borrow_and_update();
            if let Some(item) = self.take_listed(&client).await? {
                return Ok(Some(item));
            }
            let watcher = match self.list(&client, wait).await? {
                Listed::Items | Listed::Again => continue,
                Listed::Nothing(watcher) => watcher,
            };
            match (wait, watcher) {
                (Wait::Until(deadline), Some(watcher)) => {
                    if !ops::woken_before(watcher, &mut states, deadline).await {
                        return Ok(None);
                    }
                }
                _ => return Ok(None),
            }
        }
    }

    /// Tries the names left from the handle's last listing, lowest first; `None` once none
    /// is left (or the listing was dropped).
    async fn take_listed(&self, client: &Client) -> Result<Option<Vec<u8>>, Error> {
        for _ in 0..GONE_BEFORE_RELIST {
            // Left in the listing until settled: a take dropped before then loses no name.
            let next = {
                let listing = self.inner.listing.lock().expect("poisoned");
                listing.names.front().map(|name| (name.clone(), listing.pzxid))
            };
            let Some((name, pzxid)) = next else { return Ok(None) };
            let removed = self.remove(client, &name, pzxid).await?;
            if !matches!(removed, Removed::Relist) {
                self.inner.listing.lock().expect("poisoned").names.retain(|n| *n != name);
            }
            match removed {
                Removed::Item(item) => return Ok(Some(item)),
                Removed::Bad(reason) => {
                    let path = naming::child_path(&self.inner.path, &name);
                    return Err(Error::BadData { path, reason });
                }
                Removed::Gone => {}
                // A later item must not be taken before this one: list again.
                Removed::Relist => break,
            }
        }
        self.inner.listing.lock().expect("poisoned").names.clear();
        Ok(None)
    }

    /// Lists the queue's items into the handle's listing, with a children watch when the
    /// take waits.
    async fn list(&self, client: &Client, wait: Wait) -> Result<Listed, Error> {
        let inner = &self.inner;
        let listed = match wait {
            Wait::Never => client.get_children(&inner.path).await.map(|(n, s)| (n, s, None)),
            Wait::Until(_) => {
                client.get_and_watch_children(&inner.path).await.map(|(n, s, w)| (n, s, Some(w)))
            }
        };
        let (names, stat, watcher) = match listed {
            Ok(listed) => listed,
            Err(ZkError::NoNode) if matches!(wait, Wait::Never) => {
                return Ok(Listed::Nothing(None))
            }
            // Deleted while we wait: recreated, so that a watch can be set again.
            Err(ZkError::NoNode) => {
                self.ensure_path(client).await?;
                return Ok(Listed::Again);
            }
            Err(e) => {
                ops::pause_or_fail(e, &inner.path).await?;
                return Ok(Listed::Again);
            }
        };
        let names = self.unrefused(items(names, inner.layout.prefix));
        if names.is_empty() {
            return Ok(Listed::Nothing(watcher));
        }
        *inner.listing.lock().expect("poisoned") =
            Listing { names: names.into(), pzxid: stat.pzxid };
        Ok(Listed::Items)
    }

    /// Reads and deletes one item of a listing whose `pzxid` was `listed_at`.
    async fn remove(&self, client: &Client, name: &str, listed_at: i64) -> Result<Removed, Error> {
        let path = naming::child_path(&self.inner.path, name);
        loop {
            let (data, stat) = match client.get_data(&path).await {
                Ok(read) => read,
                Err(ZkError::NoNode) => return Ok(Removed::Gone),
                Err(e) => return ops::pause_or_fail(e, &path).await.map(|()| Removed::Relist),
            };
            if stat.czxid > listed_at {
                return Ok(Removed::Relist);
            }
            match self.check(name, stat.czxid, &data) {
                Checked::Item => {}
                Checked::Refused(reason) => return Ok(Removed::Bad(reason)),
                Checked::RefusedBefore => return Ok(Removed::Gone),
            }
            // The delete runs on its own task: once sent, its item is delivered even if this
            // future is dropped (to the next take of the handle).
            let (tx, rx) = oneshot::channel();
            let in_flight = self.inner.deletes.clone().read_owned().await;
            let (queue, client, version) = (self.clone(), client.clone(), stat.version);
            let node = path.clone();
            tokio::spawn(async move {
                let result = client.delete(&node, Some(version)).await;
                let _in_flight = in_flight;
                if result.is_ok() {
                    if let Err(Ok(item)) = tx.send(Ok(data)) {
                        queue.hold(item);
                    }
                } else {
                    let _ = tx.send(result.map(|()| Vec::new()));
                }
            });
            let queue = self.clone();
            let answer = Unread::new(rx, move |removed: Result<Vec<u8>, ZkError>| {
                if let Ok(item) = removed {
                    queue.hold(item);
                }
            });
            match answer.answer().await.expect("the delete task always answers") {
                Ok(item) => return Ok(Removed::Item(item)),
                Err(ZkError::NoNode) => return Ok(Removed::Gone),
                // Changed between our read and delete: read it again.
                Err(ZkError::BadVersion) => continue,
                Err(e) => return ops::write_failed(e, &path).await.map(|()| Removed::Relist),
            }
        }
    }

    /// Creates the queue path in the layout's mode, its missing parents as containers.
    pub(crate) async fn ensure_path(&self, client: &Client) -> Result<(), Error> {
        ensure_node(client, &self.inner.path, self.inner.layout.path_mode, &self.inner.acls).await
    }
}

impl Drop for QueueState {
    fn drop(&mut self) {
        let items: Vec<_> = self.returned.get_mut().expect("poisoned").drain(..).collect();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if items.is_empty() {
            return;
        }
        // Items removed for takes that never returned them: queued again rather than lost.
        let acls = self.acls.clone();
        let inner = QueueState::new(self.session.clone(), self.path.clone(), acls, self.layout);
        let queue = SimpleDistributedQueue { inner };
        runtime.spawn(async move {
            for item in items {
                if let Err(e) = queue.offer(&item).await {
                    tracing::error!(
                        path = queue.path(),
                        "could not queue a returned item again: {e}"
                    );
                }
            }
        });
    }
}
