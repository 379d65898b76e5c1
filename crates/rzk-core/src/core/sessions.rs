//! Session lifetimes: start, touch on every request, negotiated timeout, end.

use crate::txn::TxnOp;
use crate::watches::ConnId;

use super::interface::{CloseReason, Now};
use super::records::LiveSession;
use super::Core;

impl Core {
    /// Makes a session live, expiring `timeout_ms` after `now` unless touched.
    pub(super) fn start_session(
        &mut self,
        id: i64,
        timeout_ms: i32,
        conn: Option<ConnId>,
        now: Now,
    ) {
        let deadline_ms = now.mono_ms + timeout_ms.max(0) as u64;
        self.live.insert(id, LiveSession { timeout_ms, deadline_ms, conn });
        self.expiry.insert((deadline_ms, id));
    }

    /// The shell now accepts connections, at `now`: every session restored by
    /// [`Core::with_state`] gets a full timeout from `now` to reconnect, and sessions start to
    /// expire. Counting from the restore instead would charge the time between recovery and
    /// the first accept (opening the log, binding) to the clients, and a client that came back
    /// within its timeout of the server's return could find its session gone. Only the first
    /// call counts; the shell makes it once, just before its first accept.
    pub fn start_serving(&mut self, now: Now) {
        if self.serving {
            return;
        }
        self.serving = true;
        self.expiry.clear();
        for (id, s) in &mut self.live {
            s.deadline_ms = s.deadline_ms.max(now.mono_ms + s.timeout_ms.max(0) as u64);
            self.expiry.insert((s.deadline_ms, *id));
        }
    }

    /// Pushes a live session's deadline a full timeout past `now`.
    pub(super) fn touch(&mut self, session_id: i64, now: Now) {
        if let Some(s) = self.live.get_mut(&session_id) {
            s.deadline_ms = now.mono_ms + s.timeout_ms.max(0) as u64;
        }
    }

    /// The timeout a client asked for, clamped to the configured bounds.
    pub(super) fn negotiate(&self, requested_ms: i32) -> i32 {
        requested_ms.clamp(self.config.session_timeout_ms_min, self.config.session_timeout_ms_max)
    }

    /// Ends a session: its close transaction deletes its ephemerals; its connection, if any, is
    /// closed for `reason` (not for a client's own close, which is answered first). Returns the
    /// zxid of the close.
    pub(super) fn end_session(&mut self, id: i64, reason: CloseReason, now: Now) -> i64 {
        let conn = self.live.remove(&id).and_then(|s| s.conn);
        let paths = self.state.ephemerals_of(id).map(String::from).collect();
        let (zxid, _) = self.commit(id, TxnOp::CloseSession { paths }, now);
        if let Some(conn) = conn {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.session_id = None;
            }
            if reason != CloseReason::SessionClosed {
                self.close(conn, reason);
            }
        }
        zxid
    }
}
