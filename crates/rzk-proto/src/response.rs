//! Reply bodies. A body follows the [`ReplyHeader`](crate::ReplyHeader) only when `err == 0`.

use crate::jute::{Reader, Writer};
use crate::records::{Acl, ClientInfo, Stat};
use crate::{DecodeError, OpCode};

/// One result inside a `multi` or `multiRead` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// A create answered with the path only (type 1; what ZooKeeper 3.8 sends for create2).
    Create {
        /// The created path.
        path: String,
    },
    /// A create answered with path and Stat (type 15).
    Create2 {
        /// The created path.
        path: String,
        /// The new node's Stat.
        stat: Stat,
    },
    /// delete (type 2), no body.
    Delete,
    /// setData (type 5).
    SetData {
        /// The node's new Stat.
        stat: Stat,
    },
    /// check (type 13), no body.
    Check,
    /// getData (type 4).
    GetData {
        /// The data; `None` for a node created with a null buffer.
        data: Option<Vec<u8>>,
        /// The node's Stat.
        stat: Stat,
    },
    /// getChildren (type 8).
    GetChildren {
        /// Child names.
        children: Vec<String>,
    },
    /// A failed (or rolled-back) op: type -1 with `ErrorResponse{err}`.
    Error {
        /// The error code; 0 for ops before the failing one.
        err: i32,
    },
}

impl MultiResult {
    fn op_code(&self) -> OpCode {
        match self {
            MultiResult::Create { .. } => OpCode::Create,
            MultiResult::Create2 { .. } => OpCode::Create2,
            MultiResult::Delete => OpCode::Delete,
            MultiResult::SetData { .. } => OpCode::SetData,
            MultiResult::Check => OpCode::Check,
            MultiResult::GetData { .. } => OpCode::GetData,
            MultiResult::GetChildren { .. } => OpCode::GetChildren,
            MultiResult::Error { .. } => OpCode::Error,
        }
    }
}

/// A decoded reply body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// No body: delete, ping, sync-less ops, auth, setWatches, checkWatches, removeWatches,
    /// closeSession, and every error reply.
    Empty,
    /// `CreateResponse { path }`, also `SyncResponse { path }`.
    Path(String),
    /// `Create2Response { path, stat }`.
    Create2 {
        /// The created path.
        path: String,
        /// The new node's Stat.
        stat: Stat,
    },
    /// `ExistsResponse`, `SetDataResponse`, `SetACLResponse`: a Stat.
    Stat(Stat),
    /// `GetDataResponse { data, stat }`.
    GetData {
        /// The data; `None` for a node created with a null buffer.
        data: Option<Vec<u8>>,
        /// The node's Stat.
        stat: Stat,
    },
    /// `GetACLResponse { acl, stat }`.
    GetAcl {
        /// The ACL.
        acl: Vec<Acl>,
        /// The node's Stat.
        stat: Stat,
    },
    /// `GetChildrenResponse { children }`, also `GetEphemeralsResponse`.
    Children(Vec<String>),
    /// `GetChildren2Response { children, stat }`.
    Children2 {
        /// Child names.
        children: Vec<String>,
        /// The parent's Stat.
        stat: Stat,
    },
    /// `GetAllChildrenNumberResponse { totalNumber }`.
    Count(i32),
    /// `SetSASLResponse { token }`: the server's next SASL token; `None` for a null one, which
    /// ZooKeeper sends when it has no SASL server or nothing more to say.
    Sasl(Option<Vec<u8>>),
    /// `ErrorResponse { err }`: the 4-byte body of an addWatch reply.
    ErrorBody(i32),
    /// `MultiResponse`.
    Multi(Vec<MultiResult>),
    /// `WhoAmIResponse`.
    WhoAmI(Vec<ClientInfo>),
}

fn read_multi(r: &mut Reader<'_>) -> Result<Vec<MultiResult>, DecodeError> {
    let mut out = Vec::new();
    loop {
        let t = r.read_i32()?;
        let done = r.read_bool()?;
        let err = r.read_i32()?;
        if done {
            return Ok(out);
        }
        if out.len() >= crate::request::MAX_MULTI_OPS {
            return Err(DecodeError::TooManyOps(crate::request::MAX_MULTI_OPS));
        }
        let res = match OpCode::from_i32(t) {
            Some(OpCode::Create) => MultiResult::Create { path: r.read_string()? },
            Some(OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl) => {
                MultiResult::Create2 { path: r.read_string()?, stat: Stat::read(r)? }
            }
            Some(OpCode::Delete) => MultiResult::Delete,
            Some(OpCode::SetData) => MultiResult::SetData { stat: Stat::read(r)? },
            Some(OpCode::Check) => MultiResult::Check,
            Some(OpCode::GetData) => {
                MultiResult::GetData { data: r.read_buffer_opt()?, stat: Stat::read(r)? }
            }
            Some(OpCode::GetChildren) => {
                MultiResult::GetChildren { children: r.read_string_vec()? }
            }
            Some(OpCode::Error) => {
                let body = r.read_i32()?;
                // The header and the body carry the same code; the body is authoritative.
                let _ = err;
                MultiResult::Error { err: body }
            }
            _ => return Err(DecodeError::BadMultiOp(t)),
        };
        out.push(res);
    }
}

fn write_multi(results: &[MultiResult], w: &mut Writer) {
    for res in results {
        let err = if let MultiResult::Error { err } = res { *err } else { 0 };
        w.i32(res.op_code().as_i32()).bool(false).i32(err);
        match res {
            MultiResult::Create { path } => {
                w.string(path);
            }
            MultiResult::Create2 { path, stat } => {
                w.string(path);
                stat.write(w);
            }
            MultiResult::Delete | MultiResult::Check => {}
            MultiResult::SetData { stat } => stat.write(w),
            MultiResult::GetData { data, stat } => {
                w.buffer_opt(data.as_deref());
                stat.write(w);
            }
            MultiResult::GetChildren { children } => {
                w.string_vec(children);
            }
            MultiResult::Error { err } => {
                w.i32(*err);
            }
        }
    }
    w.i32(-1).bool(true).i32(-1);
}

impl Response {
    /// Decodes the success body of a reply to a request of type `op`.
    pub fn read(op: OpCode, r: &mut Reader<'_>) -> Result<Response, DecodeError> {
        use OpCode::*;
        Ok(match op {
            Create | Sync => Response::Path(r.read_string()?),
            Create2 | CreateContainer | CreateTtl => {
                Response::Create2 { path: r.read_string()?, stat: Stat::read(r)? }
            }
            Exists | SetData | SetAcl => Response::Stat(Stat::read(r)?),
            GetData | Reconfig => {
                Response::GetData { data: r.read_buffer_opt()?, stat: Stat::read(r)? }
            }
            GetAcl => Response::GetAcl { acl: Acl::read_vec(r)?, stat: Stat::read(r)? },
            GetChildren | GetEphemerals => Response::Children(r.read_string_vec()?),
            GetChildren2 => {
                Response::Children2 { children: r.read_string_vec()?, stat: Stat::read(r)? }
            }
            GetAllChildrenNumber => Response::Count(r.read_i32()?),
            AddWatch => Response::ErrorBody(r.read_i32()?),
            Sasl => Response::Sasl(r.read_buffer_opt()?),
            Multi | MultiRead => Response::Multi(read_multi(r)?),
            WhoAmI => Response::WhoAmI(r.read_vec(8, |r| {
                Ok(ClientInfo { auth_scheme: r.read_string()?, user: r.read_string()? })
            })?),
            Delete | Ping | Check | CheckWatches | RemoveWatches | Auth | SetWatches
            | SetWatches2 | CloseSession | Error | DeleteContainer | CreateSession => {
                Response::Empty
            }
        })
    }

    /// Encodes the body.
    pub fn write(&self, w: &mut Writer) {
        match self {
            Response::Empty => {}
            Response::Path(p) => {
                w.string(p);
            }
            Response::Create2 { path, stat } => {
                w.string(path);
                stat.write(w);
            }
            Response::Stat(s) => s.write(w),
            Response::GetData { data, stat } => {
                w.buffer_opt(data.as_deref());
                stat.write(w);
            }
            Response::GetAcl { acl, stat } => {
                Acl::write_vec(acl, w);
                stat.write(w);
            }
            Response::Children(c) => {
                w.string_vec(c);
            }
            Response::Children2 { children, stat } => {
                w.string_vec(children);
                stat.write(w);
            }
            Response::Count(n) | Response::ErrorBody(n) => {
                w.i32(*n);
            }
            Response::Multi(results) => write_multi(results, w),
            Response::Sasl(token) => {
                w.buffer_opt(token.as_deref());
            }
            Response::WhoAmI(infos) => {
                w.i32(infos.len() as i32);
                for i in infos {
                    w.string(&i.auth_scheme).string(&i.user);
                }
            }
        }
    }
}
