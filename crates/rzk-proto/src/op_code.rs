//! `ZooDefs.OpCode`: the request types a client may send.

/// A request type, as numbered in `ZooDefs.OpCode`. The enum is the wire table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum OpCode {
    /// Used as the result type of a failed op inside a multi response.
    Error = -1,
    /// `create`: reply carries the path only.
    Create = 1,
    /// `delete`.
    Delete = 2,
    /// `exists`.
    Exists = 3,
    /// `getData`.
    GetData = 4,
    /// `setData`.
    SetData = 5,
    /// `getACL`.
    GetAcl = 6,
    /// `setACL`.
    SetAcl = 7,
    /// `getChildren`.
    GetChildren = 8,
    /// `sync`.
    Sync = 9,
    /// `ping` (xid -2).
    Ping = 11,
    /// `getChildren2`: children and the parent's Stat.
    GetChildren2 = 12,
    /// `check`: valid only inside a multi.
    Check = 13,
    /// `multi`.
    Multi = 14,
    /// `create2`: reply carries path and Stat.
    Create2 = 15,
    /// `reconfig`.
    Reconfig = 16,
    /// `checkWatches`.
    CheckWatches = 17,
    /// `removeWatches`.
    RemoveWatches = 18,
    /// `createContainer`.
    CreateContainer = 19,
    /// `deleteContainer`: server-internal.
    DeleteContainer = 20,
    /// `createTTL`.
    CreateTtl = 21,
    /// `multiRead`.
    MultiRead = 22,
    /// `auth` (xid -4).
    Auth = 100,
    /// `setWatches` (xid -8).
    SetWatches = 101,
    /// `sasl`.
    Sasl = 102,
    /// `getEphemerals`.
    GetEphemerals = 103,
    /// `getAllChildrenNumber`.
    GetAllChildrenNumber = 104,
    /// `setWatches2` (xid -8).
    SetWatches2 = 105,
    /// `addWatch`.
    AddWatch = 106,
    /// `whoAmI`.
    WhoAmI = 107,
    /// `createSession`: a server-internal transaction type.
    CreateSession = -10,
    /// `closeSession`.
    CloseSession = -11,
}

impl OpCode {
    /// The op code for a wire value, or `None` if ZooKeeper defines no such op.
    pub fn from_i32(v: i32) -> Option<OpCode> {
        use OpCode::*;
        Some(match v {
            -1 => Error,
            1 => Create,
            2 => Delete,
            3 => Exists,
            4 => GetData,
            5 => SetData,
            6 => GetAcl,
            7 => SetAcl,
            8 => GetChildren,
            9 => Sync,
            11 => Ping,
            12 => GetChildren2,
            13 => Check,
            14 => Multi,
            15 => Create2,
            16 => Reconfig,
            17 => CheckWatches,
            18 => RemoveWatches,
            19 => CreateContainer,
            20 => DeleteContainer,
            21 => CreateTtl,
            22 => MultiRead,
            100 => Auth,
            101 => SetWatches,
            102 => Sasl,
            103 => GetEphemerals,
            104 => GetAllChildrenNumber,
            105 => SetWatches2,
            106 => AddWatch,
            107 => WhoAmI,
            -10 => CreateSession,
            -11 => CloseSession,
            _ => return None,
        })
    }

    /// The wire value.
    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// Whether the op changes state (and so becomes a transaction).
    pub fn is_write(self) -> bool {
        use OpCode::*;
        matches!(
            self,
            Create
                | Create2
                | CreateContainer
                | CreateTtl
                | Delete
                | DeleteContainer
                | SetData
                | SetAcl
                | Check
                | Multi
                | Reconfig
                | CreateSession
                | CloseSession
        )
    }
}

/// Special xids (`ClientCnxn`).
pub mod xid {
    /// A watch notification, server to client.
    pub const NOTIFICATION: i32 = -1;
    /// A ping.
    pub const PING: i32 = -2;
    /// An auth packet.
    pub const AUTH: i32 = -4;
    /// SetWatches / SetWatches2.
    pub const SET_WATCHES: i32 = -8;
}
