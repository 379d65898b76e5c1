//! SIGSTOP of a holder's process past its session timeout, then SIGCONT (docs/election.md
//! §2.2), for the latch, the mutex, the read-write lock (a writer stopped, a reader waiting) and
//! a semaphore of two leases (one of two holders stopped): the waiter takes over after the
//! timeout; the stopped holder's lease had run out before that; after SIGCONT no write of it
//! succeeds, it learns it lost, and it acquires again on a new session behind the new holder.
//! The witness writes never show more than N holders at once.

mod support;

use support::faults::{sigstop as sigstop_of, Lang};
use support::*;

both_servers! {
    t41_sigstop_latch => sigstop_latch;
    t41_sigstop_mutex => sigstop_mutex;
    t41_sigstop_read_write => sigstop_read_write;
    t41_sigstop_semaphore => sigstop_semaphore;
}

async fn sigstop_latch(kind: Kind) {
    sigstop(kind, &["latch"; 2]).await
}

async fn sigstop_mutex(kind: Kind) {
    sigstop(kind, &["mutex"; 2]).await
}

async fn sigstop_read_write(kind: Kind) {
    sigstop(kind, &["write", "read"]).await
}

/// a and c hold the two leases, b waits.
async fn sigstop_semaphore(kind: Kind) {
    sigstop(kind, &["semaphore:2"; 3]).await
}

/// Every participant but the last holds; `a` is stopped, and `b` (the last) waits for it.
async fn sigstop(kind: Kind, recipes: &[&str]) {
    let members: Vec<_> = recipes.iter().map(|r| (Lang::Rust, *r)).collect();
    sigstop_of(kind, "t41-stop", &members).await
}
