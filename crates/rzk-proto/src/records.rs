//! Fixed records from `zookeeper.jute` shared by requests, replies and events.

use crate::jute::{Reader, Writer};
use crate::DecodeError;

/// `Id { ustring scheme; ustring id; }`
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id {
    /// The auth scheme: `world`, `auth`, `digest`, `ip`, `super`, ...
    pub scheme: String,
    /// The identity within the scheme.
    pub id: String,
}

impl Id {
    /// A new id.
    pub fn new(scheme: impl Into<String>, id: impl Into<String>) -> Self {
        Id { scheme: scheme.into(), id: id.into() }
    }

    /// Reads an `Id`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Id { scheme: r.read_string()?, id: r.read_string()? })
    }

    /// Writes an `Id`.
    pub fn write(&self, w: &mut Writer) {
        w.string(&self.scheme).string(&self.id);
    }
}

/// Permission bits (`ZooDefs.Perms`).
pub mod perms {
    /// Read data and list children.
    pub const READ: i32 = 1;
    /// Set data.
    pub const WRITE: i32 = 2;
    /// Create children.
    pub const CREATE: i32 = 4;
    /// Delete children.
    pub const DELETE: i32 = 8;
    /// Set ACLs.
    pub const ADMIN: i32 = 16;
    /// All of the above.
    pub const ALL: i32 = 31;
}

/// `ACL { int perms; Id id; }`
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Acl {
    /// Permission bits, see [`perms`].
    pub perms: i32,
    /// Who the permissions are granted to.
    pub id: Id,
}

impl Acl {
    /// `world:anyone` with all permissions (`ZooDefs.Ids.OPEN_ACL_UNSAFE`).
    pub fn open() -> Vec<Acl> {
        vec![Acl { perms: perms::ALL, id: Id::new("world", "anyone") }]
    }

    /// `world:anyone` read only (`ZooDefs.Ids.READ_ACL_UNSAFE`).
    pub fn read_only() -> Vec<Acl> {
        vec![Acl { perms: perms::READ, id: Id::new("world", "anyone") }]
    }

    /// Reads an `ACL`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Acl { perms: r.read_i32()?, id: Id::read(r)? })
    }

    /// Writes an `ACL`.
    pub fn write(&self, w: &mut Writer) {
        w.i32(self.perms);
        self.id.write(w);
    }

    /// Reads a `vector<ACL>`.
    pub fn read_vec(r: &mut Reader<'_>) -> Result<Vec<Acl>, DecodeError> {
        r.read_vec(12, Acl::read)
    }

    /// Writes a `vector<ACL>`.
    pub fn write_vec(acl: &[Acl], w: &mut Writer) {
        w.i32(acl.len() as i32);
        for a in acl {
            a.write(w);
        }
    }
}

/// `Stat`: the 68-byte node metadata record, as clients see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Zxid of the create.
    pub czxid: i64,
    /// Zxid of the last data change.
    pub mzxid: i64,
    /// Create time, ms since the epoch.
    pub ctime: i64,
    /// Last modification time, ms since the epoch.
    pub mtime: i64,
    /// Data version.
    pub version: i32,
    /// Child version as clients see it (see the server's data tree for the derivation).
    pub cversion: i32,
    /// ACL version.
    pub aversion: i32,
    /// Owning session for ephemerals, else 0.
    pub ephemeral_owner: i64,
    /// Length of the data.
    pub data_length: i32,
    /// Number of children.
    pub num_children: i32,
    /// Zxid of the last child create or delete.
    pub pzxid: i64,
}

impl Stat {
    /// Encoded size in bytes.
    pub const LEN: usize = 68;

    /// Reads a `Stat`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Stat {
            czxid: r.read_i64()?,
            mzxid: r.read_i64()?,
            ctime: r.read_i64()?,
            mtime: r.read_i64()?,
            version: r.read_i32()?,
            cversion: r.read_i32()?,
            aversion: r.read_i32()?,
            ephemeral_owner: r.read_i64()?,
            data_length: r.read_i32()?,
            num_children: r.read_i32()?,
            pzxid: r.read_i64()?,
        })
    }

    /// Writes a `Stat`.
    pub fn write(&self, w: &mut Writer) {
        w.i64(self.czxid).i64(self.mzxid).i64(self.ctime).i64(self.mtime);
        w.i32(self.version).i32(self.cversion).i32(self.aversion);
        w.i64(self.ephemeral_owner).i32(self.data_length).i32(self.num_children).i64(self.pzxid);
    }
}

/// `CreateMode` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateMode {
    /// 0
    Persistent,
    /// 1
    Ephemeral,
    /// 2
    PersistentSequential,
    /// 3
    EphemeralSequential,
    /// 4
    Container,
    /// 5
    PersistentWithTtl,
    /// 6
    PersistentSequentialWithTtl,
}

impl CreateMode {
    /// The mode for a flags value; anything else is `BadArguments`.
    pub fn from_flags(flags: i32) -> Option<CreateMode> {
        use CreateMode::*;
        Some(match flags {
            0 => Persistent,
            1 => Ephemeral,
            2 => PersistentSequential,
            3 => EphemeralSequential,
            4 => Container,
            5 => PersistentWithTtl,
            6 => PersistentSequentialWithTtl,
            _ => return None,
        })
    }

    /// The flags value.
    pub fn flags(self) -> i32 {
        self as i32
    }

    /// Whether the server appends a sequence suffix.
    pub fn is_sequential(self) -> bool {
        use CreateMode::*;
        matches!(self, PersistentSequential | EphemeralSequential | PersistentSequentialWithTtl)
    }

    /// Whether the node dies with its session.
    pub fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }

    /// Whether the node carries a TTL.
    pub fn is_ttl(self) -> bool {
        matches!(self, CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl)
    }
}

/// `Watcher.Event.EventType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum EventType {
    /// Session state change (client-side).
    None = -1,
    /// The node was created.
    NodeCreated = 1,
    /// The node was deleted.
    NodeDeleted = 2,
    /// The node's data changed.
    NodeDataChanged = 3,
    /// The node's children changed.
    NodeChildrenChanged = 4,
    /// A data watch was removed.
    DataWatchRemoved = 5,
    /// A child watch was removed.
    ChildWatchRemoved = 6,
    /// A persistent watch was removed.
    PersistentWatchRemoved = 7,
}

impl EventType {
    /// The event type for a wire value.
    pub fn from_i32(v: i32) -> Option<EventType> {
        use EventType::*;
        Some(match v {
            -1 => None,
            1 => NodeCreated,
            2 => NodeDeleted,
            3 => NodeDataChanged,
            4 => NodeChildrenChanged,
            5 => DataWatchRemoved,
            6 => ChildWatchRemoved,
            7 => PersistentWatchRemoved,
            _ => return Option::None,
        })
    }
}

/// `KeeperState.SyncConnected`: the state every server-sent node event carries.
pub const STATE_SYNC_CONNECTED: i32 = 3;

/// `WatcherEvent { int type; int state; ustring path; }`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatcherEvent {
    /// The event type.
    pub event_type: EventType,
    /// The keeper state; always SyncConnected from a server.
    pub state: i32,
    /// The server path of the node.
    pub path: String,
}

impl WatcherEvent {
    /// Reads a `WatcherEvent`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let t = r.read_i32()?;
        let event_type = EventType::from_i32(t).ok_or(DecodeError::UnknownEventType(t))?;
        Ok(WatcherEvent { event_type, state: r.read_i32()?, path: r.read_string()? })
    }

    /// Writes a `WatcherEvent`.
    pub fn write(&self, w: &mut Writer) {
        w.i32(self.event_type as i32).i32(self.state).string(&self.path);
    }
}

/// `RequestHeader { int xid; int type; }`. The type stays raw so that an unknown op can still
/// be answered with its xid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// Client-assigned id, echoed in the reply.
    pub xid: i32,
    /// The op code as sent.
    pub op: i32,
}

impl RequestHeader {
    /// Reads a `RequestHeader`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(RequestHeader { xid: r.read_i32()?, op: r.read_i32()? })
    }

    /// Writes a `RequestHeader`.
    pub fn write(&self, w: &mut Writer) {
        w.i32(self.xid).i32(self.op);
    }
}

/// `ReplyHeader { int xid; long zxid; int err; }`
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyHeader {
    /// The request's xid, or a special xid.
    pub xid: i32,
    /// The server's last zxid when the reply was built.
    pub zxid: i64,
    /// An [`crate::ErrorCode`] value; the body follows only when 0.
    pub err: i32,
}

impl ReplyHeader {
    /// Encoded size in bytes.
    pub const LEN: usize = 16;

    /// Reads a `ReplyHeader`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ReplyHeader { xid: r.read_i32()?, zxid: r.read_i64()?, err: r.read_i32()? })
    }

    /// Writes a `ReplyHeader`.
    pub fn write(&self, w: &mut Writer) {
        w.i32(self.xid).i64(self.zxid).i32(self.err);
    }
}

/// `ConnectRequest`. `read_only` is `None` when the client left the trailing byte off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectRequest {
    /// Always 0.
    pub protocol_version: i32,
    /// The highest zxid the client has seen.
    pub last_zxid_seen: i64,
    /// Requested session timeout, ms.
    pub timeout_ms: i32,
    /// 0 for a new session.
    pub session_id: i64,
    /// The session password (16 bytes), zeros for a new session.
    pub passwd: Vec<u8>,
    /// Whether the client accepts a read-only server; absent for old clients.
    pub read_only: Option<bool>,
}

impl ConnectRequest {
    /// The handshake of a client asking for a new session, as Java clients send it (with the
    /// `readOnly` byte, false).
    pub fn new_session(timeout_ms: i32) -> ConnectRequest {
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: Some(false),
        }
    }

    /// Reads a `ConnectRequest`. The trailing `readOnly` byte is optional, as in
    /// `ProtocolManager`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectRequest {
            protocol_version: r.read_i32()?,
            last_zxid_seen: r.read_i64()?,
            timeout_ms: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: r.read_buffer()?,
            read_only: if r.is_empty() { None } else { Some(r.read_bool()?) },
        })
    }

    /// Writes a `ConnectRequest`.
    pub fn write(&self, w: &mut Writer) {
        w.i32(self.protocol_version).i64(self.last_zxid_seen).i32(self.timeout_ms);
        w.i64(self.session_id).buffer(&self.passwd);
        if let Some(ro) = self.read_only {
            w.bool(ro);
        }
    }
}

/// `ConnectResponse`. `read_only` mirrors whether the request carried the byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectResponse {
    /// Always 0.
    pub protocol_version: i32,
    /// Negotiated timeout, ms; 0 means the session is dead.
    pub timeout_ms: i32,
    /// The session id; 0 for a dead session.
    pub session_id: i64,
    /// The session password.
    pub passwd: Vec<u8>,
    /// Present iff the request carried it.
    pub read_only: Option<bool>,
}

impl ConnectResponse {
    /// Reads a `ConnectResponse`.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectResponse {
            protocol_version: r.read_i32()?,
            timeout_ms: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: r.read_buffer()?,
            read_only: if r.is_empty() { None } else { Some(r.read_bool()?) },
        })
    }

    /// Writes a `ConnectResponse`.
    pub fn write(&self, w: &mut Writer) {
        w.i32(self.protocol_version).i32(self.timeout_ms).i64(self.session_id);
        w.buffer(&self.passwd);
        if let Some(ro) = self.read_only {
            w.bool(ro);
        }
    }
}

/// `ClientInfo { ustring authScheme; ustring user; }`, for whoAmI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    /// The auth scheme.
    pub auth_scheme: String,
    /// The user within the scheme.
    pub user: String,
}
