//! A driver's command channel (a queue recipe's driver, or the semaphore's reaper), with its
//! nudges coalesced.
//!
//! The bound: `Wake`, `Evaluate` and `ReleaseCurrent` ask the driver to look at shared state
//! again, so one of each waiting in the channel answers every later one. Each is a flag, and
//! at most one message per flag is queued however often handles send it (a caller that
//! cancels `acquire_timeout` in a loop while the driver waits for a reconnect sends one
//! `Wake` per cancel). `Close` and `Resign` carry a caller's answer each, so they are bounded
//! by the callers waiting, as a lock's wait list is; every one of them must reach the driver
//! (a guard's drop resigns and cannot wait for room), so they are not dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::term::control::Command;
use crate::Error;

/// One flag per coalesced command: set while its message waits in the channel.
#[derive(Default)]
struct Queued {
    wake: AtomicBool,
    evaluate: AtomicBool,
    release_current: AtomicBool,
    /// How the driver ended (its node deleted, or the error it stays with), for a `Close` or
    /// `Resign` that comes after: set before the channel closes.
    ended: Mutex<Option<Result<(), Error>>>,
}

impl Queued {
    /// Answers a `Close` or `Resign` the driver will never take with how it ended.
    fn answer_ended(&self, cmd: Command) {
        let ended = self.ended.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let outcome = ended.unwrap_or(Ok(()));
        match cmd {
            Command::Resign { done, .. } | Command::Close { done: Some(done) } => {
                let _ = done.send(outcome);
            }
            _ => {}
        }
    }
}

impl Queued {
    /// The flag of a coalesced command; `None` for one that is always sent.
    fn flag(&self, cmd: &Command) -> Option<&AtomicBool> {
        match cmd {
            Command::Wake => Some(&self.wake),
            Command::Evaluate => Some(&self.evaluate),
            Command::ReleaseCurrent => Some(&self.release_current),
            Command::Close { .. } | Command::Resign { .. } => None,
        }
    }
}

/// The driver is gone.
#[derive(Debug)]
pub(crate) struct DriverGone;

/// The handles' side.
#[derive(Clone)]
pub(crate) struct Mailbox {
    tx: mpsc::UnboundedSender<Command>,
    queued: Arc<Queued>,
}

/// The driver's side.
pub(crate) struct Inbox {
    rx: mpsc::UnboundedReceiver<Command>,
    queued: Arc<Queued>,
}

/// A new channel.
pub(crate) fn mailbox() -> (Mailbox, Inbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(Queued::default());
    (Mailbox { tx, queued: queued.clone() }, Inbox { rx, queued })
}

impl Mailbox {
    /// Sends `cmd`, unless it is a nudge whose message still waits: the driver takes that one
    /// after this call, and reads the shared state then.
    ///
    /// # Errors
    /// [`DriverGone`] once the driver has ended.
    pub fn send(&self, cmd: Command) -> Result<(), DriverGone> {
        if self.queued.flag(&cmd).is_some_and(|f| f.swap(true, Ordering::AcqRel)) {
            return if self.tx.is_closed() { Err(DriverGone) } else { Ok(()) };
        }
        self.tx.send(cmd).map_err(|unsent| {
            self.queued.answer_ended(unsent.0);
            DriverGone
        })
    }
}

impl Inbox {
    /// The driver ends with `outcome` (its node deleted, or the error it stays with): every
    /// `Close` and `Resign` still queued, or sent from now on, is answered with it. Without
    /// this, a release racing the driver's own end on the same loss (the guard resolves the
    /// loss, then sends) would be answered `Ok` by a driver that never took it.
    pub fn end(&mut self, outcome: Result<(), Error>) {
        *self.queued.ended.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        self.rx.close();
        while let Ok(cmd) = self.rx.try_recv() {
            self.queued.answer_ended(cmd);
        }
    }

    /// The next command; `None` once every handle is gone.
    ///
    /// # Cancellation safety
    /// Cancellation safe: a command is taken only when this returns it.
    pub async fn recv(&mut self) -> Option<Command> {
        let cmd = self.rx.recv().await?;
        Some(self.taken(cmd))
    }

    /// Clears a nudge's flag as the driver takes it, before it acts: a nudge sent from now on
    /// is queued again, and one sent before is answered by this one. A swap, not a store: it
    /// acquires what a sender that found the flag set had released (its update of the shared
    /// state), so the driver reads that update when it acts.
    fn taken(&self, cmd: Command) -> Command {
        if let Some(f) = self.queued.flag(&cmd) {
            f.swap(false, Ordering::AcqRel);
        }
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(inbox: &mut Inbox) -> Option<Command> {
        let cmd = inbox.rx.try_recv().ok()?;
        Some(inbox.taken(cmd))
    }

    #[test]
    fn a_nudge_waiting_answers_the_later_ones() {
        let (tx, mut rx) = mailbox();
        for _ in 0..1000 {
            tx.send(Command::Wake).unwrap();
            tx.send(Command::Evaluate).unwrap();
        }
        assert!(matches!(take(&mut rx), Some(Command::Wake)));
        assert!(matches!(take(&mut rx), Some(Command::Evaluate)));
        assert!(take(&mut rx).is_none(), "one message per nudge");
        // Taken: the next nudge is queued again.
        tx.send(Command::Wake).unwrap();
        assert!(matches!(take(&mut rx), Some(Command::Wake)));
    }

    #[test]
    fn every_resign_and_close_is_queued() {
        let (tx, mut rx) = mailbox();
        for term in 0..3 {
            let (done, _) = tokio::sync::oneshot::channel();
            tx.send(Command::Resign { term, done }).unwrap();
        }
        tx.send(Command::Close { done: None }).unwrap();
        tx.send(Command::Close { done: None }).unwrap();
        let mut n = 0;
        while take(&mut rx).is_some() {
            n += 1;
        }
        assert_eq!(n, 5);
    }

    #[test]
    fn a_gone_driver_is_reported_for_a_coalesced_nudge_too() {
        let (tx, rx) = mailbox();
        tx.send(Command::Wake).unwrap();
        drop(rx);
        assert!(tx.send(Command::Wake).is_err());
        assert!(tx.send(Command::Close { done: None }).is_err());
    }
}
