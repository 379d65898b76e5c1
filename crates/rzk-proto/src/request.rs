//! Request bodies, decoded by op code.

use crate::jute::{Reader, Writer};
use crate::records::Acl;
use crate::{DecodeError, OpCode};

/// Which of the four create ops carried a [`CreateRequest`]. They share the record (createTTL
/// adds the TTL) and differ in the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateOp {
    /// `create` (1): reply is the path.
    Create,
    /// `create2` (15): reply is path and Stat.
    Create2,
    /// `createContainer` (19).
    Container,
    /// `createTTL` (21).
    Ttl,
}

impl CreateOp {
    /// The op code.
    pub fn op_code(self) -> OpCode {
        match self {
            CreateOp::Create => OpCode::Create,
            CreateOp::Create2 => OpCode::Create2,
            CreateOp::Container => OpCode::CreateContainer,
            CreateOp::Ttl => OpCode::CreateTtl,
        }
    }
}

/// `CreateRequest` / `CreateTTLRequest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    /// Which create op carried it.
    pub op: CreateOp,
    /// The requested path (a sequential node gets a suffix).
    pub path: String,
    /// Initial data; `None` is a null buffer, which ZooKeeper keeps as null.
    pub data: Option<Vec<u8>>,
    /// Initial ACL.
    pub acl: Vec<Acl>,
    /// `CreateMode` flags.
    pub flags: i32,
    /// TTL in ms; present on the wire only for [`CreateOp::Ttl`].
    pub ttl_ms: i64,
}

/// A request addressed to one path that may leave a watch (exists, getData, getChildren[2]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathWatch {
    /// The node.
    pub path: String,
    /// Whether to leave a one-shot watch.
    pub watch: bool,
}

/// `SetWatches` / `SetWatches2`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetWatches {
    /// The client's last seen zxid; changes after it fire at once.
    pub relative_zxid: i64,
    /// Data watches (from getData).
    pub data: Vec<String>,
    /// Exist watches (from exists).
    pub exist: Vec<String>,
    /// Child watches.
    pub child: Vec<String>,
    /// Persistent watches (SetWatches2 only).
    pub persistent: Vec<String>,
    /// Persistent recursive watches (SetWatches2 only).
    pub persistent_recursive: Vec<String>,
}

/// One op inside a `multi` or `multiRead`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    /// create / create2 / createContainer / createTTL
    Create(CreateRequest),
    /// delete
    Delete {
        /// The node.
        path: String,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// setData
    SetData {
        /// The node.
        path: String,
        /// New data; `None` is a null buffer.
        data: Option<Vec<u8>>,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// check
    Check {
        /// The node.
        path: String,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// getData (multiRead only)
    GetData {
        /// The node.
        path: String,
    },
    /// getChildren (multiRead only)
    GetChildren {
        /// The node.
        path: String,
    },
}

impl MultiOp {
    /// The op code written in the op's `MultiHeader`.
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiOp::Create(c) => c.op.op_code(),
            MultiOp::Delete { .. } => OpCode::Delete,
            MultiOp::SetData { .. } => OpCode::SetData,
            MultiOp::Check { .. } => OpCode::Check,
            MultiOp::GetData { .. } => OpCode::GetData,
            MultiOp::GetChildren { .. } => OpCode::GetChildren,
        }
    }

    /// The path the op addresses.
    pub fn path(&self) -> &str {
        match self {
            MultiOp::Create(c) => &c.path,
            MultiOp::Delete { path, .. }
            | MultiOp::SetData { path, .. }
            | MultiOp::Check { path, .. }
            | MultiOp::GetData { path }
            | MultiOp::GetChildren { path } => path,
        }
    }

    /// Whether this is a read op (allowed only in multiRead).
    pub fn is_read(&self) -> bool {
        matches!(self, MultiOp::GetData { .. } | MultiOp::GetChildren { .. })
    }
}

/// A decoded request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// create, create2, createContainer, createTTL
    Create(CreateRequest),
    /// delete
    Delete {
        /// The node.
        path: String,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// exists
    Exists(PathWatch),
    /// getData
    GetData(PathWatch),
    /// setData
    SetData {
        /// The node.
        path: String,
        /// New data; `None` is a null buffer.
        data: Option<Vec<u8>>,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// getACL
    GetAcl {
        /// The node.
        path: String,
    },
    /// setACL
    SetAcl {
        /// The node.
        path: String,
        /// The new ACL.
        acl: Vec<Acl>,
        /// Expected aversion, -1 for any.
        version: i32,
    },
    /// getChildren
    GetChildren(PathWatch),
    /// getChildren2
    GetChildren2(PathWatch),
    /// sync
    Sync {
        /// The node (echoed back).
        path: String,
    },
    /// ping
    Ping,
    /// stand-alone check (ZooKeeper answers Unimplemented and closes)
    Check {
        /// The node.
        path: String,
        /// Expected version.
        version: i32,
    },
    /// multi
    Multi(Vec<MultiOp>),
    /// multiRead
    MultiRead(Vec<MultiOp>),
    /// reconfig
    Reconfig {
        /// Joining servers.
        joining: String,
        /// Leaving servers.
        leaving: String,
        /// New member list.
        new_members: String,
        /// Expected config id.
        cur_config_id: i64,
    },
    /// checkWatches
    CheckWatches {
        /// The node.
        path: String,
        /// `WatcherType`: 1 child, 2 data, 3 any, 4 persistent, 5 recursive.
        watch_type: i32,
    },
    /// removeWatches
    RemoveWatches {
        /// The node.
        path: String,
        /// `WatcherType`.
        watch_type: i32,
    },
    /// auth
    Auth {
        /// Always 0.
        auth_type: i32,
        /// The scheme, e.g. `digest`.
        scheme: String,
        /// Scheme-specific credentials.
        auth: Vec<u8>,
    },
    /// setWatches (`v2 == false`) or setWatches2
    SetWatches {
        /// Whether it arrived as SetWatches2.
        v2: bool,
        /// The watches.
        watches: SetWatches,
    },
    /// sasl
    Sasl {
        /// The SASL token.
        token: Vec<u8>,
    },
    /// getEphemerals
    GetEphemerals {
        /// Path prefix; empty or `/` means all.
        prefix: String,
    },
    /// getAllChildrenNumber
    GetAllChildrenNumber {
        /// The node.
        path: String,
    },
    /// addWatch
    AddWatch {
        /// The node.
        path: String,
        /// 0 persistent, 1 persistent recursive.
        mode: i32,
    },
    /// whoAmI
    WhoAmI,
    /// closeSession
    CloseSession,
}

fn read_create(op: CreateOp, r: &mut Reader<'_>) -> Result<CreateRequest, DecodeError> {
    let path = r.read_string()?;
    let data = r.read_buffer_opt()?;
    let acl = Acl::read_vec(r)?;
    let flags = r.read_i32()?;
    let ttl_ms = if op == CreateOp::Ttl { r.read_i64()? } else { -1 };
    Ok(CreateRequest { op, path, data, acl, flags, ttl_ms })
}

fn write_create(c: &CreateRequest, w: &mut Writer) {
    w.string(&c.path).buffer_opt(c.data.as_deref());
    Acl::write_vec(&c.acl, w);
    w.i32(c.flags);
    if c.op == CreateOp::Ttl {
        w.i64(c.ttl_ms);
    }
}

fn create_op(op: OpCode) -> Option<CreateOp> {
    Some(match op {
        OpCode::Create => CreateOp::Create,
        OpCode::Create2 => CreateOp::Create2,
        OpCode::CreateContainer => CreateOp::Container,
        OpCode::CreateTtl => CreateOp::Ttl,
        _ => return None,
    })
}

fn read_path_watch(r: &mut Reader<'_>) -> Result<PathWatch, DecodeError> {
    Ok(PathWatch { path: r.read_string()?, watch: r.read_bool()? })
}

/// Upper bound on ops in one multi, so a frame of tiny headers cannot make us loop for long.
/// ZooKeeper has no such limit, but a 1 MiB frame holds at most ~100k minimal ops anyway.
pub const MAX_MULTI_OPS: usize = 100_000;

fn read_multi(r: &mut Reader<'_>, read_ops: bool) -> Result<Vec<MultiOp>, DecodeError> {
    let mut ops = Vec::new();
    loop {
        let op = r.read_i32()?;
        let done = r.read_bool()?;
        let _err = r.read_i32()?;
        if done {
            return Ok(ops);
        }
        if ops.len() >= MAX_MULTI_OPS {
            return Err(DecodeError::TooManyOps(MAX_MULTI_OPS));
        }
        let code = OpCode::from_i32(op).ok_or(DecodeError::UnknownOpCode(op))?;
        let m = match code {
            OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                MultiOp::Create(read_create(create_op(code).expect("create op"), r)?)
            }
            OpCode::Delete => MultiOp::Delete { path: r.read_string()?, version: r.read_i32()? },
            OpCode::SetData => MultiOp::SetData {
                path: r.read_string()?,
                data: r.read_buffer_opt()?,
                version: r.read_i32()?,
            },
            OpCode::Check => MultiOp::Check { path: r.read_string()?, version: r.read_i32()? },
            OpCode::GetData if read_ops => {
                let pw = read_path_watch(r)?;
                MultiOp::GetData { path: pw.path }
            }
            OpCode::GetChildren if read_ops => {
                let pw = read_path_watch(r)?;
                MultiOp::GetChildren { path: pw.path }
            }
            _ => return Err(DecodeError::BadMultiOp(op)),
        };
        ops.push(m);
    }
}

fn write_multi(ops: &[MultiOp], w: &mut Writer) {
    for op in ops {
        w.i32(op.op_code().as_i32()).bool(false).i32(-1);
        match op {
            MultiOp::Create(c) => write_create(c, w),
            MultiOp::Delete { path, version } | MultiOp::Check { path, version } => {
                w.string(path).i32(*version);
            }
            MultiOp::SetData { path, data, version } => {
                w.string(path).buffer_opt(data.as_deref()).i32(*version);
            }
            MultiOp::GetData { path } | MultiOp::GetChildren { path } => {
                w.string(path).bool(false);
            }
        }
    }
    w.i32(-1).bool(true).i32(-1);
}

impl Request {
    /// Decodes the body of a request of type `op`. The caller has already read the header;
    /// trailing bytes are ignored, as ZooKeeper does.
    pub fn read(op: OpCode, r: &mut Reader<'_>) -> Result<Request, DecodeError> {
        use OpCode::*;
        Ok(match op {
            Create | Create2 | CreateContainer | CreateTtl => {
                Request::Create(read_create(create_op(op).expect("create op"), r)?)
            }
            Delete => Request::Delete { path: r.read_string()?, version: r.read_i32()? },
            Exists => Request::Exists(read_path_watch(r)?),
            GetData => Request::GetData(read_path_watch(r)?),
            SetData => Request::SetData {
                path: r.read_string()?,
                data: r.read_buffer_opt()?,
                version: r.read_i32()?,
            },
            GetAcl => Request::GetAcl { path: r.read_string()? },
            SetAcl => Request::SetAcl {
                path: r.read_string()?,
                acl: Acl::read_vec(r)?,
                version: r.read_i32()?,
            },
            GetChildren => Request::GetChildren(read_path_watch(r)?),
            GetChildren2 => Request::GetChildren2(read_path_watch(r)?),
            Sync => Request::Sync { path: r.read_string()? },
            Ping => Request::Ping,
            Check => Request::Check { path: r.read_string()?, version: r.read_i32()? },
            Multi => Request::Multi(read_multi(r, false)?),
            MultiRead => Request::MultiRead(read_multi(r, true)?),
            Reconfig => Request::Reconfig {
                joining: r.read_string()?,
                leaving: r.read_string()?,
                new_members: r.read_string()?,
                cur_config_id: r.read_i64()?,
            },
            CheckWatches => {
                Request::CheckWatches { path: r.read_string()?, watch_type: r.read_i32()? }
            }
            RemoveWatches => {
                Request::RemoveWatches { path: r.read_string()?, watch_type: r.read_i32()? }
            }
            Auth => Request::Auth {
                auth_type: r.read_i32()?,
                scheme: r.read_string()?,
                auth: r.read_buffer()?,
            },
            SetWatches | SetWatches2 => {
                let v2 = op == SetWatches2;
                let mut w = crate::request::SetWatches {
                    relative_zxid: r.read_i64()?,
                    data: r.read_string_vec()?,
                    exist: r.read_string_vec()?,
                    child: r.read_string_vec()?,
                    ..Default::default()
                };
                if v2 {
                    w.persistent = r.read_string_vec()?;
                    w.persistent_recursive = r.read_string_vec()?;
                }
                Request::SetWatches { v2, watches: w }
            }
            Sasl => Request::Sasl { token: r.read_buffer()? },
            GetEphemerals => Request::GetEphemerals { prefix: r.read_string()? },
            GetAllChildrenNumber => Request::GetAllChildrenNumber { path: r.read_string()? },
            AddWatch => Request::AddWatch { path: r.read_string()?, mode: r.read_i32()? },
            WhoAmI => Request::WhoAmI,
            CloseSession => Request::CloseSession,
            Error | DeleteContainer | CreateSession => {
                return Err(DecodeError::UnknownOpCode(op as i32))
            }
        })
    }

    /// The op code this request is sent with.
    pub fn op_code(&self) -> OpCode {
        use Request::*;
        match self {
            Create(c) => c.op.op_code(),
            Delete { .. } => OpCode::Delete,
            Exists(_) => OpCode::Exists,
            GetData(_) => OpCode::GetData,
            SetData { .. } => OpCode::SetData,
            GetAcl { .. } => OpCode::GetAcl,
            SetAcl { .. } => OpCode::SetAcl,
            GetChildren(_) => OpCode::GetChildren,
            GetChildren2(_) => OpCode::GetChildren2,
            Sync { .. } => OpCode::Sync,
            Ping => OpCode::Ping,
            Check { .. } => OpCode::Check,
            Multi(_) => OpCode::Multi,
            MultiRead(_) => OpCode::MultiRead,
            Reconfig { .. } => OpCode::Reconfig,
            CheckWatches { .. } => OpCode::CheckWatches,
            RemoveWatches { .. } => OpCode::RemoveWatches,
            Auth { .. } => OpCode::Auth,
            SetWatches { v2: false, .. } => OpCode::SetWatches,
            SetWatches { v2: true, .. } => OpCode::SetWatches2,
            Sasl { .. } => OpCode::Sasl,
            GetEphemerals { .. } => OpCode::GetEphemerals,
            GetAllChildrenNumber { .. } => OpCode::GetAllChildrenNumber,
            AddWatch { .. } => OpCode::AddWatch,
            WhoAmI => OpCode::WhoAmI,
            CloseSession => OpCode::CloseSession,
        }
    }

    /// Encodes the body (no header).
    pub fn write(&self, w: &mut Writer) {
        use Request::*;
        match self {
            Create(c) => write_create(c, w),
            Delete { path, version } | Check { path, version } => {
                w.string(path).i32(*version);
            }
            Exists(p) | GetData(p) | GetChildren(p) | GetChildren2(p) => {
                w.string(&p.path).bool(p.watch);
            }
            SetData { path, data, version } => {
                w.string(path).buffer_opt(data.as_deref()).i32(*version);
            }
            GetAcl { path } | Sync { path } | GetAllChildrenNumber { path } => {
                w.string(path);
            }
            GetEphemerals { prefix } => {
                w.string(prefix);
            }
            SetAcl { path, acl, version } => {
                w.string(path);
                Acl::write_vec(acl, w);
                w.i32(*version);
            }
            Ping | WhoAmI | CloseSession => {}
            Multi(ops) | MultiRead(ops) => write_multi(ops, w),
            Reconfig { joining, leaving, new_members, cur_config_id } => {
                w.string(joining).string(leaving).string(new_members).i64(*cur_config_id);
            }
            CheckWatches { path, watch_type } | RemoveWatches { path, watch_type } => {
                w.string(path).i32(*watch_type);
            }
            Auth { auth_type, scheme, auth } => {
                w.i32(*auth_type).string(scheme).buffer(auth);
            }
            SetWatches { v2, watches } => {
                w.i64(watches.relative_zxid);
                w.string_vec(&watches.data).string_vec(&watches.exist).string_vec(&watches.child);
                if *v2 {
                    w.string_vec(&watches.persistent).string_vec(&watches.persistent_recursive);
                }
            }
            AddWatch { path, mode } => {
                w.string(path).i32(*mode);
            }
            Sasl { token } => {
                w.buffer(token);
            }
        }
    }

    /// Encodes a whole frame: length, header and body.
    pub fn to_frame(&self, xid: i32) -> Vec<u8> {
        let mut w = Writer::frame();
        w.i32(xid).i32(self.op_code().as_i32());
        self.write(&mut w);
        w.finish_frame()
    }
}
