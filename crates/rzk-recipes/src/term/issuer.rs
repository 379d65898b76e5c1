//! The one constructor of a [`Term`]: what every term of one recipe handle shares (its
//! issuer), and the node one term is held on.

use std::sync::Arc;

use rzk_client::SessionId;
use tokio::sync::watch;

use crate::session::Publisher;
use crate::telemetry::{self, Labels};
use crate::term::control::{CloseFlags, Lifecycle};
use crate::term::guard::{Fence, Term};
use crate::term::mailbox::Mailbox;
use crate::term::token::FencingToken;

/// What every term of one recipe handle shares: the queue driver's for a latch, a selector or
/// a mutex side, the semaphore's (its reaper takes the resignations) for a lease.
pub(crate) struct Issuer {
    pub participant_id: String,
    pub session: Arc<Publisher>,
    /// Where the term's resignation goes.
    pub cmd: Mailbox,
    pub lifecycle: Lifecycle,
    pub close: Arc<CloseFlags>,
    /// The recipe's metric labels.
    pub telemetry: Labels,
}

/// The node one term is held on.
pub(crate) struct HeldNode {
    pub path: String,
    /// What a guarded write checks first: that the node is still ours.
    pub fence: Fence,
    /// Its czxid: the term's fencing token.
    pub czxid: i64,
    /// The session that owns it, and that session's generation.
    pub session_id: SessionId,
    pub generation: u64,
}

impl Issuer {
    /// Term number `number` on `node`, started now and not lost; its guard is the caller's.
    pub fn issue(self, node: HeldNode, number: u64, resumed: bool) -> Arc<Term> {
        let (lost, _) = watch::channel(None);
        telemetry::term_started(&self.telemetry);
        Arc::new(Term {
            token: FencingToken(node.czxid),
            node_path: node.path,
            fence: node.fence,
            participant_id: self.participant_id,
            session_id: node.session_id,
            generation: node.generation,
            term: number,
            resumed,
            started_at: crate::clock::now(),
            session: self.session,
            lost,
            cmd: self.cmd,
            lifecycle: self.lifecycle,
            close: self.close,
            telemetry: self.telemetry,
        })
    }
}
