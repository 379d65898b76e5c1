//! One request frame: its header decoded, its body decoded, and the request routed to the code
//! that answers it.

use rzk_proto::jute::Reader;
use rzk_proto::{xid, ErrorCode, OpCode, Request, RequestHeader, Response};

use crate::prep::{self, View};
use crate::state::Applied;
use crate::watches::ConnId;

use super::frames::reply_frame;
use super::interface::{CloseReason, ConnError, Now};
use super::monitoring::op_name;
use super::Core;

impl Core {
    /// One request frame on an open connection: decoded, answered, and any watch it left past the
    /// limits closes the connection.
    pub(super) fn request(
        &mut self,
        conn: ConnId,
        frame: &[u8],
        now: Now,
    ) -> Result<(), ConnError> {
        let mut r = Reader::new(frame);
        let header = RequestHeader::read(&mut r).map_err(ConnError::Header)?;
        if header.xid == xid::NOTIFICATION {
            return Err(ConnError::NotificationXid);
        }
        if !self.may_request(conn, header.op) {
            // ZooKeeper's AuthenticationHelper: zxid 0, no body, and the connection (not the
            // session, which lives until it expires) closed without reading further.
            let err = ErrorCode::SessionClosedRequireSaslAuth;
            self.send(conn, reply_frame(header.xid, 0, err, None));
            self.close(conn, CloseReason::AuthRequired);
            return Ok(());
        }
        let session_id = self.conns[&conn].session_id.unwrap_or(0);
        self.touch(session_id, now);
        let op = OpCode::from_i32(header.op).filter(|op| {
            !matches!(
                op,
                OpCode::Check | OpCode::CreateSession | OpCode::DeleteContainer | OpCode::Error
            )
        });
        let Some(op) = op else {
            // ZooKeeper answers with zxid -1 here, before the request reaches its pipeline.
            self.send(conn, reply_frame(header.xid, -1, ErrorCode::Unimplemented, None));
            self.close(conn, CloseReason::Unimplemented(header.op));
            return Ok(());
        };
        if let Some(c) = self.conns.get_mut(&conn) {
            c.last_op = op_name(op);
        }
        let Ok(req) = Request::read(op, &mut r) else {
            // ZooKeeper decodes bodies inside its pipeline, so a bad body is an error reply
            // (and, for a write, an error transaction), not a dropped connection.
            if op.is_write() {
                self.commit_error(session_id, ErrorCode::MarshallingError, now);
            }
            self.reply(conn, header.xid, ErrorCode::MarshallingError, None);
            return Ok(());
        };
        self.dispatch(conn, session_id, header.xid, req, now);
        // The request is answered as if its watch were left; the close that follows tells
        // the client it was not.
        for refused in self.watches.take_refused() {
            self.close(refused, CloseReason::TooManyWatches);
        }
        Ok(())
    }

    /// Routes a decoded request to the code that answers it.
    fn dispatch(&mut self, conn: ConnId, session_id: i64, xid: i32, req: Request, now: Now) {
        match req {
            Request::Ping => {
                self.send(conn, reply_frame(xid::PING, self.state.last_zxid(), ErrorCode::Ok, None))
            }
            Request::Create(c) => {
                let prepped =
                    prep::create(&View::new(&self.state), &self.caller(conn, session_id), &c);
                let op = c.op;
                self.write(conn, session_id, xid, prepped, now, |a| match (a, op) {
                    (Applied::Created { path, .. }, rzk_proto::CreateOp::Create) => {
                        Response::Path(path.clone())
                    }
                    (Applied::Created { path, stat }, _) => {
                        Response::Create2 { path: path.clone(), stat: *stat }
                    }
                    _ => Response::Empty,
                });
            }
            Request::Delete { path, version } => {
                let prepped = prep::delete(
                    &View::new(&self.state),
                    &self.caller(conn, session_id),
                    &path,
                    version,
                );
                self.write(conn, session_id, xid, prepped, now, |_| Response::Empty);
            }
            Request::SetData { path, data, version } => {
                let prepped = prep::set_data(
                    &View::new(&self.state),
                    &self.caller(conn, session_id),
                    &path,
                    &data,
                    version,
                );
                self.write(conn, session_id, xid, prepped, now, |a| match a {
                    Applied::DataSet(stat) => Response::Stat(*stat),
                    _ => Response::Empty,
                });
            }
            Request::SetAcl { path, acl, version } => {
                let prepped = prep::set_acl(
                    &View::new(&self.state),
                    &self.caller(conn, session_id),
                    &path,
                    &acl,
                    version,
                );
                self.write(conn, session_id, xid, prepped, now, |a| match a {
                    Applied::AclSet(stat) => Response::Stat(*stat),
                    _ => Response::Empty,
                });
            }
            Request::Multi(ops) => self.multi(conn, session_id, xid, &ops, now),
            Request::CloseSession => {
                let zxid = self.end_session(session_id, CloseReason::SessionClosed, now);
                self.send(conn, reply_frame(xid, zxid, ErrorCode::Ok, None));
                self.close(conn, CloseReason::SessionClosed);
            }
            // Auth and setWatches echo the request's xid: Java and kazoo send -4 and -8, but
            // zookeeper-client sends auth with an ordinary xid and matches the reply on it.
            Request::Auth { scheme, auth, .. } => self.auth(conn, xid, &scheme, &auth),
            Request::SetWatches { watches, .. } => {
                self.set_watches(conn, &watches);
                self.send(conn, reply_frame(xid, self.state.last_zxid(), ErrorCode::Ok, None));
            }
            Request::Reconfig { .. } => self.reply(conn, xid, ErrorCode::ReconfigDisabled, None),
            Request::Sasl { token } => self.sasl(conn, xid, &token),
            Request::Check { .. } => unreachable!("filtered before decoding"),
            Request::GetChildren(pw) => self.get_children(conn, xid, &pw, false),
            Request::GetChildren2(pw) => self.get_children(conn, xid, &pw, true),
            Request::GetData(pw) => self.get_data(conn, xid, &pw),
            Request::MultiRead(ops) => self.multi_read(conn, xid, &ops),
            read => {
                let result = self.read(conn, session_id, read);
                match result {
                    Ok(body) => self.reply(conn, xid, ErrorCode::Ok, Some(&body)),
                    Err(err) => self.reply(conn, xid, err, None),
                }
            }
        }
    }
}
