//! [`Core::tick`]: the work time brings, session expiry and the reaping of empty containers and
//! expired TTL nodes, and [`Core::next_deadline`], when it is next due.

use crate::txn::{owner_ttl_ms, TxnOp};

use super::interface::{CloseReason, Now};
use super::Core;

impl Core {
    /// Expires sessions whose deadline has passed (once serving, see [`Core::start_serving`])
    /// and reaps containers and TTL nodes when their interval comes round. Calling it early or
    /// twice is harmless.
    pub fn tick(&mut self, now: Now) {
        while let Some(&(deadline, id)) = self.expiry.first().filter(|_| self.serving) {
            if deadline > now.mono_ms {
                break;
            }
            self.expiry.pop_first();
            let Some(s) = self.live.get(&id) else { continue };
            if s.deadline_ms > now.mono_ms {
                self.expiry.insert((s.deadline_ms, id));
                continue;
            }
            self.counters.sessions_expired += 1;
            self.end_session(id, CloseReason::SessionExpired, now);
        }
        if now.mono_ms >= self.next_reap_ms {
            self.next_reap_ms = now.mono_ms + self.config.container_check_interval_ms.max(1);
            self.reap(now);
        }
    }

    /// `ContainerManager`: deletes empty containers that have had children, and empty TTL
    /// nodes not modified within their TTL.
    fn reap(&mut self, now: Now) {
        let mut victims: Vec<String> = Vec::new();
        let max = self.config.container_reaps_per_check_max;
        for p in self.state.containers() {
            if victims.len() >= max {
                break;
            }
            let Some(n) = self.state.node(p) else { continue };
            if n.children.is_empty() && n.meta.cversion > 0 {
                victims.push(p.to_string());
            }
        }
        for p in self.state.ttl_nodes() {
            if victims.len() >= max {
                break;
            }
            let Some(n) = self.state.node(p) else { continue };
            let ttl = owner_ttl_ms(n.meta.ephemeral_owner).unwrap_or(i64::MAX);
            if n.children.is_empty() && now.wall_ms.saturating_sub(n.meta.mtime) > ttl {
                victims.push(p.to_string());
            }
        }
        for p in victims {
            self.commit(0, TxnOp::Delete { path: p }, now);
        }
    }

    /// When [`Core::tick`] next has work: the earliest session deadline or reaping time.
    pub fn next_deadline(&self) -> u64 {
        let session = self.expiry.first().filter(|_| self.serving).map_or(u64::MAX, |(d, _)| *d);
        session.min(self.next_reap_ms)
    }
}
