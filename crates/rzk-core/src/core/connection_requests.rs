//! Requests about the connection rather than the tree: `auth` adds identities (and enforced
//! authentication decides which requests they allow), `setWatches` re-arms a reconnected
//! client's watches.

use rzk_proto::{ErrorCode, EventType, Id, OpCode};

use crate::acl;
use crate::watches::{AddWatchMode, ConnId};

use super::frames::{notification_frame, reply_frame};
use super::interface::CloseReason;
use super::Core;

impl Core {
    /// Whether a request of op code `op` may be served on `conn`: auth and sasl always are;
    /// anything else only once the connection holds an id of an enforced scheme, if any is.
    pub(super) fn may_request(&self, conn: ConnId, op: i32) -> bool {
        let required = &self.config.enforced_auth_schemes;
        if required.is_empty() || op == OpCode::Auth as i32 || op == OpCode::Sasl as i32 {
            return true;
        }
        self.conns[&conn].auth.iter().any(|id| required.contains(&id.scheme))
    }

    /// An auth packet: adds identities to the connection within its limits, or closes it.
    pub(super) fn auth(&mut self, conn: ConnId, xid: i32, scheme: &str, credentials: &[u8]) {
        let ids = match scheme {
            "digest" => acl::digest_auth_ids(credentials, self.config.super_digest.as_deref()),
            "ip" => vec![Id::new("ip", self.conns[&conn].peer.ip().to_string())],
            _ => {
                self.send(conn, reply_frame(xid, 0, ErrorCode::AuthFailed, None));
                self.close(conn, CloseReason::AuthFailed);
                return;
            }
        };
        let (ids_max, bytes_max) =
            (self.config.auth_ids_per_connection_max, self.config.auth_bytes_per_connection_max);
        let c = self.conns.get_mut(&conn).expect("caller checked");
        let id_bytes = |id: &Id| id.scheme.len() + id.id.len();
        let mut bytes: usize = c.auth.iter().map(id_bytes).sum();
        let mut over = false;
        for id in ids {
            if c.auth.contains(&id) {
                continue;
            }
            bytes = bytes.saturating_add(id_bytes(&id));
            if c.auth.len() >= ids_max || bytes > bytes_max {
                over = true;
                break;
            }
            c.auth.push(id);
        }
        if over {
            // ZooKeeper's answer to any auth it cannot accept; the ids added so far stay, and
            // go with the connection.
            self.send(conn, reply_frame(xid, 0, ErrorCode::AuthFailed, None));
            self.close(conn, CloseReason::TooManyAuthIds);
            return;
        }
        self.send(conn, reply_frame(xid, 0, ErrorCode::Ok, None));
    }

    /// `DataTree.setWatches`: re-arms watches after a reconnect, firing at once for anything
    /// that changed after the client's last zxid.
    pub(super) fn set_watches(&mut self, conn: ConnId, w: &rzk_proto::SetWatches) {
        let rel = w.relative_zxid;
        let mut fire: Vec<(EventType, &str)> = Vec::new();
        for p in &w.data {
            match self.state.node(p) {
                None => fire.push((EventType::NodeDeleted, p)),
                Some(n) if n.meta.mzxid > rel => fire.push((EventType::NodeDataChanged, p)),
                Some(_) => self.watches.add_data(p, conn),
            }
        }
        for p in &w.exist {
            match self.state.node(p) {
                Some(_) => fire.push((EventType::NodeCreated, p)),
                None => self.watches.add_data(p, conn),
            }
        }
        for p in &w.child {
            match self.state.node(p) {
                None => fire.push((EventType::NodeDeleted, p)),
                Some(n) if n.meta.pzxid > rel => fire.push((EventType::NodeChildrenChanged, p)),
                Some(_) => self.watches.add_child(p, conn),
            }
        }
        for p in &w.persistent {
            self.watches.add_persistent(p, conn, AddWatchMode::Persistent);
        }
        for p in &w.persistent_recursive {
            self.watches.add_persistent(p, conn, AddWatchMode::PersistentRecursive);
        }
        let zxid = self.state.last_zxid();
        for (t, p) in fire {
            self.send(conn, notification_frame(zxid, t, p));
        }
    }
}
