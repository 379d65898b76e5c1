//! The values a caller hands in and gets back: create modes and options, ACLs, sessions,
//! states and watch events.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

pub use rzk_proto::Stat;

/// A session's id. Prints in hex, as ZooKeeper's logs and four-letter words do.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct SessionId(pub i64);

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A session's id and password: what another connection needs to resume it.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session's id.
    pub id: SessionId,
    /// The password the server issued with it.
    pub password: Vec<u8>,
}

impl fmt::Debug for SessionInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionInfo").field("id", &self.id).finish_non_exhaustive()
    }
}

/// The client's view of its session, as ZooKeeper's `KeeperState` names it.
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// The connection is lost; the client is trying to resume the session.
    Disconnected,
    /// Connected, with the session alive.
    SyncConnected,
    /// Connected to a read-only server: reads are served, writes fail with
    /// [`Error::NotReadOnly`](crate::Error::NotReadOnly). Only a session that asked for it
    /// ([`Connector::with_read_only`](crate::Connector::with_read_only)) gets here.
    ConnectedReadOnly,
    /// The server rejected the credentials: terminal.
    AuthFailed,
    /// The server expired the session: terminal.
    Expired,
    /// The client closed the session: terminal.
    Closed,
}

impl SessionState {
    /// Whether nothing more happens on the session.
    pub fn is_terminated(self) -> bool {
        matches!(self, SessionState::AuthFailed | SessionState::Expired | SessionState::Closed)
    }

    /// Whether the session is connected.
    pub fn is_connected(self) -> bool {
        matches!(self, SessionState::SyncConnected | SessionState::ConnectedReadOnly)
    }
}

impl fmt::Display for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What a watch event reports.
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub enum EventType {
    /// The session ended: the event's `session_state` says how. No node event follows.
    Session,
    /// The node was created.
    NodeCreated,
    /// The node was deleted.
    NodeDeleted,
    /// The node's data changed.
    NodeDataChanged,
    /// The node's children changed.
    NodeChildrenChanged,
    /// Events of a persistent watch may be missing: read what the watch covers again. Either
    /// the watcher fell [`PERSISTENT_WATCH_BACKLOG`](crate::PERSISTENT_WATCH_BACKLOG) events
    /// behind, and the events after the ones delivered before this were dropped until it
    /// caught up; or the session was resumed on a new connection, and ZooKeeper replays no
    /// persistent-watch event of the disconnection. The event names the watched path. Only a
    /// [`PersistentWatcher`](crate::PersistentWatcher) delivers it.
    Lagged,
    /// The one-shot getData or exists watch was removed by
    /// [`Client::remove_watches`](crate::Client::remove_watches); it will not fire.
    DataWatchRemoved,
    /// The one-shot getChildren watch was removed by
    /// [`Client::remove_watches`](crate::Client::remove_watches); it will not fire.
    ChildWatchRemoved,
    /// The persistent watch was removed by
    /// [`Client::remove_watches`](crate::Client::remove_watches) with [`WatcherType::Any`]:
    /// no event follows.
    PersistentWatchRemoved,
}

impl EventType {
    /// Whether the event is a watch's last: the session ended or the watch was removed.
    pub fn ends_watch(self) -> bool {
        matches!(
            self,
            EventType::Session
                | EventType::DataWatchRemoved
                | EventType::ChildWatchRemoved
                | EventType::PersistentWatchRemoved
        )
    }
}

/// Which watches [`Client::remove_watches`](crate::Client::remove_watches) removes, as
/// ZooKeeper 3.8's `WatcherType` names them on the wire.
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub enum WatcherType {
    /// The one-shot watches getChildren set.
    Children,
    /// The one-shot watches getData and exists set.
    Data,
    /// Every watch on the path, persistent and persistent recursive ones included.
    Any,
}

impl WatcherType {
    /// The value of `RemoveWatchesRequest.type`.
    pub(crate) fn wire(self) -> i32 {
        match self {
            WatcherType::Children => 1,
            WatcherType::Data => 2,
            WatcherType::Any => 3,
        }
    }
}

impl EventType {
    pub(crate) fn from_wire(t: rzk_proto::EventType) -> Option<EventType> {
        use rzk_proto::EventType as W;
        Some(match t {
            W::NodeCreated => EventType::NodeCreated,
            W::NodeDeleted => EventType::NodeDeleted,
            W::NodeDataChanged => EventType::NodeDataChanged,
            W::NodeChildrenChanged => EventType::NodeChildrenChanged,
            _ => return None,
        })
    }
}

/// A watch event, or the end of the session for a watch that can no longer fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened.
    pub event_type: EventType,
    /// For [`EventType::Session`], the state the session ended in; otherwise `SyncConnected`.
    pub session_state: SessionState,
    /// The node, relative to the client's chroot; empty for a session event, the watched
    /// path for [`EventType::Lagged`].
    pub path: String,
    /// The zxid of the change; -1 for a session or lagged event, or from a server that does
    /// not send it.
    pub zxid: i64,
}

impl WatchedEvent {
    pub(crate) fn session(state: SessionState) -> WatchedEvent {
        WatchedEvent {
            event_type: EventType::Session,
            session_state: state,
            path: String::new(),
            zxid: -1,
        }
    }

    pub(crate) fn lagged(path: &str) -> WatchedEvent {
        WatchedEvent {
            event_type: EventType::Lagged,
            session_state: SessionState::SyncConnected,
            path: path.to_owned(),
            zxid: -1,
        }
    }
}

/// How a node is created.
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub enum CreateMode {
    /// Stays until deleted.
    Persistent,
    /// Persistent, with a sequence number appended.
    PersistentSequential,
    /// Deleted when the session that created it ends.
    Ephemeral,
    /// Ephemeral, with a sequence number appended.
    EphemeralSequential,
    /// Deleted by the server once it has had children and has none.
    Container,
    /// Persistent, deleted by the server after a TTL without changes or children.
    PersistentWithTtl,
    /// Sequential and with a TTL.
    PersistentSequentialWithTtl,
}

impl CreateMode {
    /// Options for this mode with `acls`.
    pub const fn with_acls(self, acls: Acls<'_>) -> CreateOptions<'_> {
        CreateOptions { mode: self, acls, ttl: None }
    }

    pub(crate) fn wire(self) -> rzk_proto::CreateMode {
        use rzk_proto::CreateMode as W;
        match self {
            CreateMode::Persistent => W::Persistent,
            CreateMode::PersistentSequential => W::PersistentSequential,
            CreateMode::Ephemeral => W::Ephemeral,
            CreateMode::EphemeralSequential => W::EphemeralSequential,
            CreateMode::Container => W::Container,
            CreateMode::PersistentWithTtl => W::PersistentWithTtl,
            CreateMode::PersistentSequentialWithTtl => W::PersistentSequentialWithTtl,
        }
    }
}

/// A create's mode, ACL and TTL.
#[derive(Debug, Clone, Copy)]
pub struct CreateOptions<'a> {
    pub(crate) mode: CreateMode,
    pub(crate) acls: Acls<'a>,
    pub(crate) ttl: Option<Duration>,
}

impl<'a> CreateOptions<'a> {
    /// The same options with a TTL, for the `*WithTtl` modes.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The mode.
    pub fn mode(&self) -> CreateMode {
        self.mode
    }
}

/// The sequence number a sequential create appended; prints as ZooKeeper formats it in the
/// node's name (ten digits, or nineteen past `i32::MAX`).
#[derive(Debug, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CreateSequence(pub(crate) i64);

impl CreateSequence {
    /// The number.
    pub fn into_i64(self) -> i64 {
        self.0
    }

    /// The sequence suffix of a created path; -1 when it has none.
    pub(crate) fn of_path(path: &str) -> CreateSequence {
        let digits = path.len() - path.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let n = if digits >= 10 { path[path.len() - digits..].parse().unwrap_or(-1) } else { -1 };
        CreateSequence(n)
    }
}

impl fmt::Display for CreateSequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 <= i64::from(i32::MAX) {
            write!(f, "{:010}", self.0)
        } else {
            write!(f, "{:019}", self.0)
        }
    }
}

/// An ACL permission set.
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub struct Permission(i32);

impl Permission {
    /// Read the node's data and list its children.
    pub const READ: Permission = Permission(rzk_proto::perms::READ);
    /// Set the node's data.
    pub const WRITE: Permission = Permission(rzk_proto::perms::WRITE);
    /// Create children.
    pub const CREATE: Permission = Permission(rzk_proto::perms::CREATE);
    /// Delete children.
    pub const DELETE: Permission = Permission(rzk_proto::perms::DELETE);
    /// Set the ACL.
    pub const ADMIN: Permission = Permission(rzk_proto::perms::ADMIN);
    /// Everything.
    pub const ALL: Permission = Permission(rzk_proto::perms::ALL);
    /// Nothing.
    pub const NONE: Permission = Permission(0);

    /// The wire's bit set.
    pub fn bits(self) -> i32 {
        self.0
    }

    /// The set from the wire's bits.
    pub fn from_bits(bits: i32) -> Permission {
        Permission(bits)
    }
}

impl std::ops::BitOr for Permission {
    type Output = Permission;
    fn bitor(self, rhs: Permission) -> Permission {
        Permission(self.0 | rhs.0)
    }
}

/// Who an ACL entry is for: a scheme and an id in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AuthId {
    /// The scheme (`world`, `auth`, `digest`, `ip`, `x509`, ...).
    pub scheme: Cow<'static, str>,
    /// The id within the scheme.
    pub id: Cow<'static, str>,
}

impl AuthId {
    /// An id.
    pub fn new(scheme: impl Into<Cow<'static, str>>, id: impl Into<Cow<'static, str>>) -> Self {
        AuthId { scheme: scheme.into(), id: id.into() }
    }

    /// `world:anyone`.
    pub const fn anyone() -> AuthId {
        AuthId { scheme: Cow::Borrowed("world"), id: Cow::Borrowed("anyone") }
    }

    /// `auth:`: whoever created the node, as authenticated then.
    pub const fn creator() -> AuthId {
        AuthId { scheme: Cow::Borrowed("auth"), id: Cow::Borrowed("") }
    }
}

/// One ACL entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Acl {
    permission: Permission,
    auth_id: AuthId,
}

impl Acl {
    /// An entry granting `permission` to `auth_id`.
    pub const fn new(permission: Permission, auth_id: AuthId) -> Acl {
        Acl { permission, auth_id }
    }

    /// The permissions granted.
    pub fn permission(&self) -> Permission {
        self.permission
    }

    /// Who they are granted to.
    pub fn auth_id(&self) -> &AuthId {
        &self.auth_id
    }

    pub(crate) fn wire(&self) -> rzk_proto::Acl {
        rzk_proto::Acl {
            perms: self.permission.0,
            id: rzk_proto::Id::new(self.auth_id.scheme.as_ref(), self.auth_id.id.as_ref()),
        }
    }

    pub(crate) fn from_wire(a: rzk_proto::Acl) -> Acl {
        Acl { permission: Permission(a.perms), auth_id: AuthId::new(a.id.scheme, a.id.id) }
    }
}

static ANYONE_ALL: [Acl; 1] = [Acl::new(Permission::ALL, AuthId::anyone())];
static ANYONE_READ: [Acl; 1] = [Acl::new(Permission::READ, AuthId::anyone())];
static CREATOR_ALL: [Acl; 1] = [Acl::new(Permission::ALL, AuthId::creator())];

/// A borrowed ACL: the entries a create or a setAcl sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acls<'a>(&'a [Acl]);

impl<'a> Acls<'a> {
    /// The given entries.
    pub const fn new(acls: &'a [Acl]) -> Acls<'a> {
        Acls(acls)
    }

    /// ZooKeeper's `OPEN_ACL_UNSAFE`: everything for anyone.
    pub const fn anyone_all() -> Acls<'static> {
        Acls(&ANYONE_ALL)
    }

    /// ZooKeeper's `READ_ACL_UNSAFE`: read for anyone.
    pub const fn anyone_read() -> Acls<'static> {
        Acls(&ANYONE_READ)
    }

    /// ZooKeeper's `CREATOR_ALL_ACL`: everything for the creator's authenticated ids.
    pub const fn creator_all() -> Acls<'static> {
        Acls(&CREATOR_ALL)
    }

    /// The entries.
    pub fn as_slice(&self) -> &'a [Acl] {
        self.0
    }

    pub(crate) fn wire(&self) -> Vec<rzk_proto::Acl> {
        self.0.iter().map(Acl::wire).collect()
    }
}

impl AsRef<[Acl]> for Acls<'_> {
    fn as_ref(&self) -> &[Acl] {
        self.0
    }
}

/// The kind of a persistent watch ([`Client::watch`](crate::Client::watch)).
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub enum AddWatchMode {
    /// The node's creation, deletion, data and children changes, until removed.
    Persistent,
    /// Creation, deletion and data changes of the node and every node under it.
    PersistentRecursive,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_parse_and_print_as_zookeeper_names_them() {
        let s = CreateSequence::of_path("/l/_c_x-lock-0000000042");
        assert_eq!((s.into_i64(), s.to_string()), (42, "0000000042".to_owned()));
        assert_eq!(CreateSequence::of_path("/plain").into_i64(), -1);
        assert_eq!(CreateSequence::of_path("/v1").into_i64(), -1, "a short number is a name");
        assert_eq!(CreateSequence(i64::from(i32::MAX) + 1).to_string().len(), 19);
    }

    #[test]
    fn acls_convert_to_the_wire() {
        let w = Acls::anyone_all().wire();
        assert_eq!(w, rzk_proto::Acl::open());
        assert_eq!(Acl::from_wire(w[0].clone()), ANYONE_ALL[0]);
    }
}
