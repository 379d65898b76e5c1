//! Reads: answered from the tree, never changing it; they may leave watches.

use rzk_proto::jute::Writer;
use rzk_proto::{
    perms, ClientInfo, ErrorCode, Id, MultiOp, MultiResult, PathWatch, ReplyHeader, Request,
    Response, Stat,
};

use crate::acl;
use crate::state::{Node, State};
use crate::watches::{AddWatchMode, ConnId, WatcherType};

use super::interface::CloseReason;
use super::Core;

/// A node a read may see: `NoNode`, or `NoAuth` without READ on it.
fn readable<'s>(st: &'s State, auth: &[Id], p: &str) -> Result<&'s Node, ErrorCode> {
    let n = st.node(p).ok_or(ErrorCode::NoNode)?;
    if acl::check(st.acl_of(n), perms::READ, auth) {
        Ok(n)
    } else {
        Err(ErrorCode::NoAuth)
    }
}

impl Core {
    /// getChildren and getChildren2, encoded straight from the tree: an election parent with
    /// thousands of children is read on every join and every handoff, and a `String` per child
    /// (allocated, copied, encoded, freed) was most of the cost.
    pub(super) fn get_children(&mut self, conn: ConnId, xid: i32, pw: &PathWatch, with_stat: bool) {
        let st = &self.state;
        let n = match readable(st, &self.conns[&conn].auth, &pw.path) {
            Ok(n) => n,
            Err(err) => return self.reply(conn, xid, err, None),
        };
        let names: usize = n.children.iter().map(|c| 4 + c.len()).sum();
        let mut w = Writer::frame_with_capacity(ReplyHeader::LEN + 4 + names + Stat::LEN);
        ReplyHeader { xid, zxid: st.last_zxid(), err: 0 }.write(&mut w);
        w.i32(n.children.len() as i32);
        for c in &n.children {
            w.string(c);
        }
        if with_stat {
            st.stat_of(n).write(&mut w);
        }
        if pw.watch {
            self.watches.add_child(&pw.path, conn);
        }
        self.send(conn, w.finish_frame());
    }

    /// getData, encoded straight from the tree into a frame of the right size: the most
    /// frequent request of read-heavy clients, where copying the data out first and growing
    /// the frame were measurable.
    pub(super) fn get_data(&mut self, conn: ConnId, xid: i32, pw: &PathWatch) {
        let st = &self.state;
        let n = match readable(st, &self.conns[&conn].auth, &pw.path) {
            Ok(n) => n,
            Err(err) => return self.reply(conn, xid, err, None),
        };
        let data = n.data.as_deref();
        let len = ReplyHeader::LEN + 4 + data.map_or(0, <[u8]>::len) + Stat::LEN;
        let mut w = Writer::frame_with_capacity(len);
        ReplyHeader { xid, zxid: st.last_zxid(), err: 0 }.write(&mut w);
        w.buffer_opt(data);
        st.stat_of(n).write(&mut w);
        if pw.watch {
            self.watches.add_data(&pw.path, conn);
        }
        self.send(conn, w.finish_frame());
    }

    /// multiRead, built only up to `reply_bytes_max`: its ops are a few bytes each, so one
    /// request could otherwise ask for the same large node tens of thousands of times.
    pub(super) fn multi_read(&mut self, conn: ConnId, xid: i32, ops: &[MultiOp]) {
        let auth = &self.conns[&conn].auth;
        let st = &self.state;
        // The reply header and the multi's end marker; then per op its result header (type,
        // done, err) and body.
        let mut bytes = ReplyHeader::LEN + 9;
        let mut results = Vec::with_capacity(ops.len().min(1024));
        for op in ops {
            let (found, is_data) = match op {
                MultiOp::GetData { path } => (readable(st, auth, path), true),
                MultiOp::GetChildren { path } => (readable(st, auth, path), false),
                _ => (Err(ErrorCode::BadArguments), false),
            };
            let body = match found {
                Ok(n) if is_data => 4 + n.data.as_deref().map_or(0, <[u8]>::len) + Stat::LEN,
                Ok(n) => 4 + n.children.iter().map(|c| 4 + c.len()).sum::<usize>(),
                Err(_) => 4,
            };
            bytes = bytes.saturating_add(9 + body);
            // Java's client refuses a frame of `jute.maxbuffer` bytes or more.
            if bytes >= self.config.reply_bytes_max {
                self.close(conn, CloseReason::ReplyTooLarge);
                return;
            }
            results.push(match found {
                Ok(n) if is_data => MultiResult::GetData {
                    data: n.data.as_deref().map(<[u8]>::to_vec),
                    stat: st.stat_of(n),
                },
                Ok(n) => MultiResult::GetChildren {
                    children: n.children.iter().map(|c| c.to_string()).collect(),
                },
                Err(e) => MultiResult::Error { err: e.as_i32() },
            });
        }
        self.reply(conn, xid, ErrorCode::Ok, Some(&Response::Multi(results)));
    }

    /// Reads never change the state; they may leave watches.
    pub(super) fn read(
        &mut self,
        conn: ConnId,
        session_id: i64,
        req: Request,
    ) -> Result<Response, ErrorCode> {
        let auth = &self.conns[&conn].auth;
        let st = &self.state;
        match req {
            Request::Exists(pw) => {
                if pw.path.contains('\0') {
                    return Err(ErrorCode::BadArguments);
                }
                // The watch is left even when the node is missing, so a later create fires it.
                let stat = st.node(&pw.path).map(|n| st.stat_of(n));
                if pw.watch {
                    self.watches.add_data(&pw.path, conn);
                }
                stat.map(Response::Stat).ok_or(ErrorCode::NoNode)
            }
            Request::GetData(_) => unreachable!("encoded by get_data"),
            Request::GetAcl { path } => {
                let n = st.node(&path).ok_or(ErrorCode::NoNode)?;
                let list = st.acl_of(n);
                let stat = st.stat_of(n);
                if acl::check(list, perms::ADMIN, auth) {
                    Ok(Response::GetAcl { acl: list.to_vec(), stat })
                } else if acl::check(list, acl::READ_OR_ADMIN, auth) {
                    Ok(Response::GetAcl { acl: acl::masked(list), stat })
                } else {
                    Err(ErrorCode::NoAuth)
                }
            }
            Request::Sync { path } => Ok(Response::Path(path)),
            Request::GetAllChildrenNumber { path } => {
                readable(st, auth, &path)?;
                Ok(Response::Count(st.descendant_count(&path) as i32))
            }
            Request::GetEphemerals { prefix } => {
                let all = prefix.is_empty() || prefix == "/";
                let list = st
                    .ephemerals_of(session_id)
                    .filter(|p| all || p.starts_with(prefix.as_str()))
                    .map(str::to_string)
                    .collect();
                Ok(Response::Children(list))
            }
            Request::MultiRead(_) => unreachable!("answered by multi_read"),
            Request::WhoAmI => Ok(Response::WhoAmI(
                auth.iter()
                    .map(|id| ClientInfo {
                        auth_scheme: id.scheme.clone(),
                        user: match id.scheme.as_str() {
                            "digest" => id.id.split(':').next().unwrap_or("").to_string(),
                            _ => id.id.clone(),
                        },
                    })
                    .collect(),
            )),
            Request::AddWatch { path, mode } => {
                let mode = match mode {
                    0 => AddWatchMode::Persistent,
                    1 => AddWatchMode::PersistentRecursive,
                    _ => return Err(ErrorCode::BadArguments),
                };
                self.watches.add_persistent(&path, conn, mode);
                Ok(Response::ErrorBody(0))
            }
            Request::CheckWatches { path, watch_type } => {
                let t = WatcherType::from_i32(watch_type).ok_or(ErrorCode::BadArguments)?;
                if self.watches.contains(&path, conn, t) {
                    Ok(Response::Empty)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }
            Request::RemoveWatches { path, watch_type } => {
                let t = WatcherType::from_i32(watch_type).ok_or(ErrorCode::BadArguments)?;
                if self.watches.remove(&path, conn, t) {
                    Ok(Response::Empty)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }
            _ => Err(ErrorCode::Unimplemented),
        }
    }
}
