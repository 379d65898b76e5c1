//! The reaper of a semaphore's lease nodes: it deletes every node nobody holds any more (a
//! released lease, a lost one, a cancelled or timed-out acquire's, a create whose reply was
//! lost) and retries while the session that owns the node lives. A node of a session that is
//! over needs nothing: it went with its session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rzk_client::Client;
use tokio::sync::oneshot;

use crate::naming;
use crate::session::Session;
use crate::term::control::Command;
use crate::term::mailbox::{mailbox, Inbox, Mailbox};
use crate::zk_error::{classify, Class, ZkError};
use crate::Error;

/// Pause between two rounds of deletes that could not be confirmed (connection loss).
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Which node to delete.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A node whose path we know.
    Node(String),
    /// Whatever a create with this protected UUID made (its reply never came): found by the
    /// `_c_<uuid>-` prefix among the leases.
    Uuid(String),
}

/// A node nobody holds, on session generation `generation`.
struct Stale {
    generation: u64,
    target: Target,
    /// The lease term whose node it was, if it was a granted lease's.
    term: Option<u64>,
    /// Answered once the node is gone.
    done: Vec<oneshot::Sender<Result<(), Error>>>,
}

/// What the handles and the reaper task share.
#[derive(Default)]
struct Ledger {
    /// Granted leases by term number: their node and generation.
    held: HashMap<u64, (String, u64)>,
    stale: Vec<Stale>,
}

/// The handle side: registers leases and abandoned nodes. Terms of granted leases resign
/// through [`Reaper::commands`], as every term resigns to the recipe that issued it.
#[derive(Clone)]
pub(crate) struct Reaper {
    pending: Arc<Mutex<Ledger>>,
    cmd: Mailbox,
}

impl Reaper {
    /// Starts the reaper task of the lease nodes under `leases`. It runs while a handle, a
    /// term or a node to delete remains.
    pub fn spawn(session: &Session, leases: String) -> Reaper {
        let pending = Arc::new(Mutex::new(Ledger::default()));
        let (cmd, cmd_rx) = mailbox();
        let task =
            ReaperTask { session: session.clone(), leases, pending: pending.clone(), cmd_rx };
        tokio::spawn(task.run());
        Reaper { pending, cmd }
    }

    /// The channel a lease's term resigns to.
    pub fn commands(&self) -> Mailbox {
        self.cmd.clone()
    }

    /// Records a granted lease: term `term` holds `node` on `generation`.
    pub fn hold(&self, term: u64, node: &str, generation: u64) {
        let mut p = self.pending.lock().expect("poisoned");
        p.held.insert(term, (node.to_string(), generation));
    }

    /// Hands over a node nobody holds; the receiver answers once it is gone.
    pub fn abandon(&self, generation: u64, target: Target) -> oneshot::Receiver<Result<(), Error>> {
        let (tx, rx) = oneshot::channel();
        let stale = Stale { generation, target, term: None, done: vec![tx] };
        self.pending.lock().expect("poisoned").stale.push(stale);
        let _ = self.cmd.send(Command::Wake);
        rx
    }
}

struct ReaperTask {
    session: Session,
    leases: String,
    pending: Arc<Mutex<Ledger>>,
    cmd_rx: Inbox,
}

/// What became of one delete.
enum Reaped {
    Done(Result<(), Error>),
    Retry,
}

impl ReaperTask {
    async fn run(mut self) {
        let mut open = true;
        loop {
            self.sweep().await;
            let waiting = !self.pending.lock().expect("poisoned").stale.is_empty();
            if !open && !waiting {
                return;
            }
            tokio::select! {
                biased;
                cmd = self.cmd_rx.recv(), if open => match cmd {
                    Some(cmd) => self.on_command(cmd),
                    None => open = false,
                },
                _ = tokio::time::sleep(RETRY_PAUSE), if waiting => {}
            }
        }
    }

    fn on_command(&mut self, cmd: Command) {
        let Command::Resign { term, done } = cmd else { return };
        let mut p = self.pending.lock().expect("poisoned");
        if let Some((path, generation)) = p.held.remove(&term) {
            let target = Target::Node(path);
            p.stale.push(Stale { generation, target, term: Some(term), done: vec![done] });
        } else if let Some(s) = (p.stale.iter_mut())
            .find(|s| s.term == Some(term))
            .filter(|_| !crate::bugs::semaphore_release_before_delete())
        {
            // Lost before (a suspension), and its node's delete still owed: the guard's own
            // release is answered with that delete, as its docs promise.
            s.done.push(done);
        } else {
            // Lost and deleted before: nothing more to do.
            let _ = done.send(Ok(()));
        }
    }

    /// Tries every stale node once; keeps the ones whose delete could not be confirmed.
    async fn sweep(&mut self) {
        let items = std::mem::take(&mut self.pending.lock().expect("poisoned").stale);
        let mut keep = Vec::new();
        for item in items {
            match self.reap(&item).await {
                Reaped::Done(r) => {
                    if let Err(e) = &r {
                        tracing::warn!(target = ?item.target, %e, "could not delete a lease node");
                    }
                    for done in item.done {
                        let _ = done.send(r.clone());
                    }
                }
                Reaped::Retry => keep.push(item),
            }
        }
        self.pending.lock().expect("poisoned").stale.extend(keep);
    }

    async fn reap(&self, item: &Stale) -> Reaped {
        let client = {
            let s = self.session.shared().snap.borrow();
            if s.generation != item.generation || s.state.is_terminal() {
                // That session is over: its ephemeral nodes went with it.
                return Reaped::Done(Ok(()));
            }
            match &s.client {
                Some(c) => c.clone(),
                None => return Reaped::Retry,
            }
        };
        let result = match &item.target {
            Target::Node(path) => client.delete(path, None).await,
            Target::Uuid(uuid) => delete_by_uuid(&client, &self.leases, uuid).await,
        };
        match result {
            Ok(()) => Reaped::Done(Ok(())),
            Err(e) => match classify(&e) {
                Class::NoNode | Class::SessionEnd => Reaped::Done(Ok(())),
                Class::ConnectionLoss | Class::Transient => Reaped::Retry,
                Class::Fatal => {
                    let path = match &item.target {
                        Target::Node(node) => node,
                        Target::Uuid(_) => &self.leases,
                    };
                    Reaped::Done(Err(Error::from_zk(e, path)))
                }
            },
        }
    }
}

/// Deletes every lease node a create with protected UUID `uuid` made. The create was sent on
/// this session before this read, so a node it made is listed.
async fn delete_by_uuid(client: &Client, leases: &str, uuid: &str) -> Result<(), ZkError> {
    let prefix = naming::uuid_prefix(uuid);
    for name in client.list_children(leases).await? {
        if name.starts_with(&prefix) {
            match client.delete(&naming::child_path(leases, &name), None).await {
                Ok(()) | Err(ZkError::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
