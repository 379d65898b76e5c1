//! The node operations of [`Client`]. Each queues its request when called and returns a
//! future that owns everything it needs (`'static`), so it can be spawned or raced.
//!
//! # Errors
//! Every operation fails with the server's error for the request ([`Error::NoNode`],
//! [`Error::NodeExists`], [`Error::BadVersion`], [`Error::NoAuth`], ...), with
//! [`Error::ConnectionLoss`] when the connection failed before the answer (a write's outcome
//! is then unknown), and with [`Error::SessionExpired`] / [`Error::ClientClosed`] once the
//! session has ended. A malformed path is [`Error::BadArguments`] before anything is sent.
//!
//! # Cancellation safety
//! The request is sent whether or not the future is polled; dropping the future only drops
//! the answer (and, for a watching read, the watch's handle).

use std::future::Future;

use rzk_proto::{CreateOp, CreateRequest, PathWatch, Request, Response};
use tokio::sync::oneshot;

use crate::core::{WatchOff, WatchOn, Watching, WhileAway};
use crate::types::{Acl, AddWatchMode, CreateOptions, CreateSequence, Stat, WatcherType};
use crate::watcher::{OneshotWatcher, PersistentWatcher, PERSISTENT_WATCH_BACKLOG};
use crate::watches::{Backlog, Kind, Sink};
use crate::{Client, Error};

/// Who a session is authenticated as (ZooKeeper's `whoAmI`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthUser {
    /// The scheme.
    pub scheme: String,
    /// The user within it.
    pub user: String,
}

/// Where a server keeps the ensemble's configuration (ZooKeeper's `ZooDefs.CONFIG_NODE`).
const CONFIG_NODE: &str = "/zookeeper/config";

fn unexpected(r: Response) -> Error {
    Error::Protocol(format!("unexpected response {r:?}"))
}

/// An exists answer: the stat, or `None` for a missing node.
fn stat_or_none(answer: Result<Response, Error>) -> Result<Option<Stat>, Error> {
    match answer {
        Ok(Response::Stat(stat)) => Ok(Some(stat)),
        Ok(r) => Err(unexpected(r)),
        Err(Error::NoNode) => Ok(None),
        Err(e) => Err(e),
    }
}

fn version(v: Option<i32>) -> i32 {
    v.unwrap_or(-1)
}

impl Client {
    /// Queues a read of `path` (`make` builds it) without a watch.
    fn read(
        &self,
        path: &str,
        make: fn(PathWatch) -> Request,
    ) -> impl Future<Output = Result<Response, Error>> + Send + 'static {
        let req = self.server_path(path).map(|path| make(PathWatch { path, watch: false }));
        self.submit(req, None)
    }

    /// Queues a read of `path` that leaves a one-shot watch of `kind`, registered when the
    /// reply says it was set: the answer to come, and the watch's handle.
    fn watched(
        &self,
        path: &str,
        make: fn(PathWatch) -> Request,
        kind: Kind,
    ) -> Result<
        (impl Future<Output = Result<Response, Error>> + Send + 'static, OneshotWatcher),
        Error,
    > {
        let path = self.server_path(path)?;
        let (tx, rx) = oneshot::channel();
        let on = WatchOn { path: path.clone(), kind, sink: Sink::Once(tx) };
        let answer = self.submit(Ok(make(PathWatch { path, watch: true })), Some(on));
        Ok((answer, OneshotWatcher { rx, state: self.shared.state.clone() }))
    }

    /// Creates a node; returns its stat and, for a sequential mode, its sequence number (-1
    /// otherwise).
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence), Error>> + Send + 'static {
        let req = self.create_request(path, data, options).map(Request::Create);
        let fut = self.submit(req, None);
        async move {
            match fut.await? {
                Response::Create2 { path, stat } => Ok((stat, CreateSequence::of_path(&path))),
                r => Err(unexpected(r)),
            }
        }
    }

    pub(crate) fn create_request(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<CreateRequest, Error> {
        use rzk_proto::CreateMode as M;
        // A TTL turns a persistent mode into its TTL mode, as ZooKeeper's `CreateMode` pairs
        // them; the server keeps TTLs below 2^40 ms.
        let mode = match (options.mode.wire(), options.ttl) {
            (_, Some(t)) if t.is_zero() || t.as_millis() >= 1 << 40 => {
                return Err(Error::BadArguments("a TTL must be 1 ms to 2^40 ms"))
            }
            (M::Persistent | M::PersistentWithTtl, Some(_)) => M::PersistentWithTtl,
            (M::PersistentSequential | M::PersistentSequentialWithTtl, Some(_)) => {
                M::PersistentSequentialWithTtl
            }
            (_, Some(_)) => return Err(Error::BadArguments("only a persistent node takes a TTL")),
            (m, None) if m.is_ttl() => return Err(Error::BadArguments("a TTL mode needs a TTL")),
            (m, None) => m,
        };
        let op = match mode {
            m if m.is_ttl() => CreateOp::Ttl,
            M::Container => CreateOp::Container,
            _ => CreateOp::Create2,
        };
        if options.acls.as_slice().is_empty() {
            return Err(Error::InvalidAcl);
        }
        let ttl_ms = options.ttl.map_or(-1, |t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX));
        Ok(CreateRequest {
            op,
            path: self.server_path(path)?,
            data: Some(data.to_vec()),
            acl: options.acls.wire(),
            flags: mode.flags(),
            ttl_ms,
        })
    }

    /// Creates `path` and every missing ancestor with `options`, as `mkdir -p`: a node that
    /// exists already is fine, `path` included. Not atomic: a failure can leave some
    /// ancestors created. One request when only `path` is missing.
    ///
    /// [`Error::BadArguments`] for an ephemeral or sequential mode; [`Error::NoNode`] when
    /// the chroot does not exist.
    pub fn mkdir(
        &self,
        path: &str,
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let mode = options.mode.wire();
        let checked = if mode.is_sequential() || mode.is_ephemeral() {
            Err(Error::BadArguments("mkdir takes a persistent or container mode"))
        } else {
            self.server_path(path).map(|_| ())
        };
        // Every prefix's create, built now so that the future owns them.
        let mut prefixes = Vec::new();
        if checked.is_ok() {
            let mut end = path.len();
            while end > 0 {
                prefixes.push(self.create_request(&path[..end], &[], options));
                end = path[..end].rfind('/').unwrap_or(0);
            }
        }
        let client = self.clone();
        async move {
            checked?;
            // prefixes[0] is `path`, prefixes[i + 1] the parent of prefixes[i].
            let mut at = 0;
            loop {
                match client.submit(prefixes[at].clone().map(Request::Create), None).await {
                    Ok(_) | Err(Error::NodeExists) if at == 0 => return Ok(()),
                    Ok(_) | Err(Error::NodeExists) => at -= 1,
                    Err(Error::NoNode) if at + 1 < prefixes.len() => at += 1,
                    Err(e) => return Err(e),
                }
            }
        }
    }

    /// Deletes a node, at `expected_version` if given.
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let req = self
            .server_path(path)
            .map(|path| Request::Delete { path, version: version(expected_version) });
        let fut = self.submit(req, None);
        async move { fut.await.map(drop) }
    }

    /// A node's data and stat.
    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat), Error>> + Send + 'static {
        let fut = self.read(path, Request::GetData);
        async move {
            match fut.await? {
                Response::GetData { data, stat } => Ok((data.unwrap_or_default(), stat)),
                r => Err(unexpected(r)),
            }
        }
    }

    /// A node's data and stat, and a watch on its next change or deletion.
    pub fn get_and_watch_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher), Error>> + Send + 'static {
        let queued = self.watched(path, Request::GetData, Kind::Data);
        async move {
            let (answer, w) = queued?;
            match answer.await? {
                Response::GetData { data, stat } => Ok((data.unwrap_or_default(), stat, w)),
                r => Err(unexpected(r)),
            }
        }
    }

    /// A node's stat, or `None` if it does not exist.
    pub fn check_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>, Error>> + Send + 'static {
        let fut = self.read(path, Request::Exists);
        async move { stat_or_none(fut.await) }
    }

    /// A node's stat (or `None`), and a watch on its creation, change or deletion.
    pub fn check_and_watch_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher), Error>> + Send + 'static {
        // A `Data` watch becomes an `Exist` one when the node is missing (see `Core`).
        let queued = self.watched(path, Request::Exists, Kind::Data);
        async move {
            let (answer, w) = queued?;
            Ok((stat_or_none(answer.await)?, w))
        }
    }

    /// Sets a node's data, at `expected_version` if given; the new stat.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat, Error>> + Send + 'static {
        let req = self.server_path(path).map(|path| Request::SetData {
            path,
            data: Some(data.to_vec()),
            version: version(expected_version),
        });
        let fut = self.submit(req, None);
        async move {
            match fut.await? {
                Response::Stat(stat) => Ok(stat),
                r => Err(unexpected(r)),
            }
        }
    }

    /// A node's children's names.
    pub fn list_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send + 'static {
        let fut = self.read(path, Request::GetChildren);
        async move {
            match fut.await? {
                Response::Children(c) => Ok(c),
                r => Err(unexpected(r)),
            }
        }
    }

    /// A node's children's names and its stat.
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat), Error>> + Send + 'static {
        let fut = self.read(path, Request::GetChildren2);
        async move {
            match fut.await? {
                Response::Children2 { children, stat } => Ok((children, stat)),
                r => Err(unexpected(r)),
            }
        }
    }

    /// A node's children's names, and a watch on their next change or the node's deletion.
    pub fn list_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher), Error>> + Send + 'static {
        let queued = self.watched(path, Request::GetChildren, Kind::Child);
        async move {
            let (answer, w) = queued?;
            match answer.await? {
                Response::Children(c) => Ok((c, w)),
                r => Err(unexpected(r)),
            }
        }
    }

    /// [`get_children`](Self::get_children) with a watch, as
    /// [`list_and_watch_children`](Self::list_and_watch_children).
    pub fn get_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat, OneshotWatcher), Error>> + Send + 'static
    {
        let queued = self.watched(path, Request::GetChildren2, Kind::Child);
        async move {
            let (answer, w) = queued?;
            match answer.await? {
                Response::Children2 { children, stat } => Ok((children, stat, w)),
                r => Err(unexpected(r)),
            }
        }
    }

    /// How many nodes are under `path` (ZooKeeper's `getAllChildrenNumber`).
    pub fn count_descendants_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<usize, Error>> + Send + 'static {
        let req = self.server_path(path).map(|path| Request::GetAllChildrenNumber { path });
        let fut = self.submit(req, None);
        async move {
            match fut.await? {
                Response::Count(n) => Ok(usize::try_from(n).unwrap_or(0)),
                r => Err(unexpected(r)),
            }
        }
    }

    /// A node's ACL and stat.
    pub fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat), Error>> + Send + 'static {
        let req = self.server_path(path).map(|path| Request::GetAcl { path });
        let fut = self.submit(req, None);
        async move {
            match fut.await? {
                Response::GetAcl { acl, stat } => {
                    Ok((acl.into_iter().map(Acl::from_wire).collect(), stat))
                }
                r => Err(unexpected(r)),
            }
        }
    }

    /// Sets a node's ACL, at ACL version `expected_aversion` if given; the new stat.
    pub fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        expected_aversion: Option<i32>,
    ) -> impl Future<Output = Result<Stat, Error>> + Send + 'static {
        let acl = acl.iter().map(Acl::wire).collect();
        let req = self.server_path(path).map(|path| Request::SetAcl {
            path,
            acl,
            version: version(expected_aversion),
        });
        let fut = self.submit(req, None);
        async move {
            match fut.await? {
                Response::Stat(stat) => Ok(stat),
                r => Err(unexpected(r)),
            }
        }
    }

    /// Waits until the server has applied every write made before it (ZooKeeper's `sync`).
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let req = self.server_path(path).map(|path| Request::Sync { path });
        let fut = self.submit(req, None);
        async move { fut.await.map(drop) }
    }

    /// Adds a persistent watch (ZooKeeper's `addWatch`) on `path`.
    ///
    /// The watcher holds up to [`PERSISTENT_WATCH_BACKLOG`] unread events; a reader that
    /// falls further behind gets an [`EventType::Lagged`](crate::EventType::Lagged) event
    /// where events were dropped.
    pub fn watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher, Error>> + Send + 'static {
        let kind = Kind::of_mode(mode);
        let (backlog, rx) = Backlog::new(path, PERSISTENT_WATCH_BACKLOG);
        let req = self.server_path(path).map(|p| {
            let mode = match mode {
                AddWatchMode::Persistent => 0,
                AddWatchMode::PersistentRecursive => 1,
            };
            (
                Request::AddWatch { path: p.clone(), mode },
                WatchOn { path: p, kind, sink: Sink::Many(backlog) },
            )
        });
        let (req, on) = match req {
            Ok((r, on)) => (Ok(r), Some(on)),
            Err(e) => (Err(e), None),
        };
        let server_path = on.as_ref().map(|w| w.path.clone()).unwrap_or_default();
        let fut = self.submit(req, on);
        let w = PersistentWatcher {
            rx,
            state: self.shared.state.clone(),
            ended: None,
            task: self.shared.task(),
            server_path,
        };
        async move { fut.await.map(|_| w) }
    }

    /// Removes this session's watches of `which` at `path`, here and on the server
    /// (ZooKeeper's `removeAllWatches` with `local = false`). Each removed watcher gets a
    /// removal event ([`EventType::DataWatchRemoved`](crate::EventType::DataWatchRemoved),
    /// `ChildWatchRemoved` or `PersistentWatchRemoved`) and nothing after it. The kinds
    /// follow the Java client 3.8: [`WatcherType::Any`] is the one that removes persistent
    /// watches. On ZooKeeper 3.8 a `Data` removal also takes the server's side of a
    /// persistent watch on the same path, which the Java client does not notice either:
    /// remove with `Any` where both are set.
    ///
    /// [`Error::NoWatcher`] when the server has no such watch (nothing is removed here
    /// then); [`Error::ConnectionLoss`] when the connection failed first.
    pub fn remove_watches(
        &self,
        path: &str,
        which: WatcherType,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        self.unwatch(path, which, false)
    }

    /// Removes this session's watches of `which` at `path` here whatever the server says,
    /// and at once when the session has no connection (ZooKeeper's `removeAllWatches` with
    /// `local = true`); a connected session asks the server to remove its watches too.
    /// A watch left on the server fires once more into nothing, and is not set again on
    /// a reconnect.
    ///
    /// [`Error::NoWatcher`] when there was no such watch here and the server removed none.
    pub fn remove_watches_locally(
        &self,
        path: &str,
        which: WatcherType,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        self.unwatch(path, which, true)
    }

    fn unwatch(
        &self,
        path: &str,
        which: WatcherType,
        local: bool,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        let call = self.server_path(path).map(|server| {
            let request = Request::RemoveWatches { path: server.clone(), watch_type: which.wire() };
            let client_path = path.to_owned();
            let off = WatchOff { path: server, client_path, which, local };
            (request, Watching::Remove(off))
        });
        let (request, watch) = match call {
            Ok((r, w)) => (Ok(r), Some(w)),
            Err(e) => (Err(e), None),
        };
        let fut = self.submit_with(request, watch, WhileAway::Defer);
        async move { fut.await.map(drop) }
    }

    /// Who the session is authenticated as (ZooKeeper's `whoAmI`).
    pub fn list_auth_users(
        &self,
    ) -> impl Future<Output = Result<Vec<AuthUser>, Error>> + Send + 'static {
        let fut = self.submit(Ok(Request::WhoAmI), None);
        async move {
            match fut.await? {
                Response::WhoAmI(v) => Ok(v
                    .into_iter()
                    .map(|c| AuthUser { scheme: c.auth_scheme, user: c.user })
                    .collect()),
                r => Err(unexpected(r)),
            }
        }
    }

    /// The session's ephemeral nodes whose paths start with `prefix` (ZooKeeper's
    /// `getEphemerals`; `/` for all of them), as the caller's paths.
    pub fn list_ephemerals(
        &self,
        prefix: &str,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send + 'static {
        let req = self.server_path(prefix).map(|prefix| Request::GetEphemerals { prefix });
        let fut = self.submit(req, None);
        let chroot = self.shared.chroot.clone();
        async move {
            match fut.await? {
                Response::Children(paths) => {
                    Ok(paths.into_iter().map(|p| chroot.to_client(p)).collect())
                }
                r => Err(unexpected(r)),
            }
        }
    }

    /// The ensemble's configuration as the server holds it (ZooKeeper's `getConfig`: the
    /// data of `/zookeeper/config`, whatever the chroot), and its stat: `server.N=` lines
    /// and the configuration's `version`.
    pub fn get_config(
        &self,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat), Error>> + Send + 'static {
        let path = CONFIG_NODE.to_owned();
        let fut = self.submit(Ok(Request::GetData(PathWatch { path, watch: false })), None);
        async move {
            match fut.await? {
                Response::GetData { data, stat } => Ok((data.unwrap_or_default(), stat)),
                r => Err(unexpected(r)),
            }
        }
    }
}
