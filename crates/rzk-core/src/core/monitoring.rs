//! What the four-letter words and the AdminServer read: uptime, connection details, outstanding outputs, session
//! deadlines, and the operation names `cons` prints.

use std::net::SocketAddr;

use rzk_proto::OpCode;

use super::interface::Now;
use super::Core;
use crate::watches::ConnId;

impl Core {
    /// Milliseconds since the core started, for `srvr`/`mntr` uptime.
    pub fn uptime_ms(&self, now: Now) -> u64 {
        now.mono_ms.saturating_sub(self.started_mono_ms)
    }

    /// Per-connection details for `cons` and `stat`: (peer, session, received, sent, last op).
    pub fn connection_details(&self) -> Vec<(SocketAddr, Option<i64>, u64, u64, &'static str)> {
        self.conns.values().map(|c| (c.peer, c.session_id, c.received, c.sent, c.last_op)).collect()
    }

    /// The session a connection serves, for the AdminServer's watch reports, which ZooKeeper
    /// keys by session.
    pub fn session_of(&self, conn: ConnId) -> Option<i64> {
        self.conns.get(&conn).and_then(|c| c.session_id)
    }

    /// The negotiated timeout of a live session, for the AdminServer's `connections`.
    pub fn session_timeout_ms(&self, session: i64) -> Option<i32> {
        self.live.get(&session).map(|s| s.timeout_ms)
    }

    /// Outputs waiting for durability, for `srvr`'s "Outstanding".
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// Session deadlines relative to `now`, for `dump`.
    pub fn session_deadlines(&self, now: Now) -> Vec<(i64, i64)> {
        let mut v: Vec<(i64, i64)> = self
            .live
            .iter()
            .map(|(id, s)| (*id, s.deadline_ms as i64 - now.mono_ms as i64))
            .collect();
        v.sort_unstable();
        v
    }
}

/// The names ZooKeeper's `cons` prints for the last operation.
pub(super) fn op_name(op: OpCode) -> &'static str {
    use OpCode::*;
    match op {
        Create | Create2 | CreateContainer | CreateTtl => "CREA",
        Delete => "DELE",
        Exists => "EXIS",
        GetData => "GETD",
        SetData => "SETD",
        GetAcl => "GETA",
        SetAcl => "SETA",
        GetChildren => "GETC",
        GetChildren2 => "GETC2",
        Sync => "SYNC",
        Ping => "PING",
        Multi => "MULT",
        MultiRead => "MLTR",
        CloseSession => "CLOS",
        SetWatches | SetWatches2 => "SETW",
        Auth => "AUTH",
        _ => "OTHR",
    }
}
