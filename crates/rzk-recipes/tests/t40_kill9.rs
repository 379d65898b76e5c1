//! `kill -9` of a holder's process (docs/election.md §3.4), for every recipe: participant
//! processes (`src/bin/participant.rs`) hold in turn; after the kill of the first holder the
//! next in line holds 3.0-5.5 s later (T = 4 s, tick 500 ms) with a larger token, the last
//! still waits, and the witness writes, in server order, show at most N holders at once (one
//! for the latch, the selector, the mutex and the read-write lock, whose writer is killed with a
//! reader and a writer waiting; two for a semaphore of two leases) and, with one holder, never
//! go back to an older token. The checker sees the same on the processes' own lines. In the
//! race election the next holder is whichever waiter wins the race.

mod support;

use support::faults::{kill9 as kill9_of, Lang};
use support::*;

both_servers! {
    t40_kill9_latch => kill9_latch;
    t40_kill9_selector => kill9_selector;
    t40_kill9_mutex => kill9_mutex;
    t40_kill9_read_write => kill9_read_write;
    t40_kill9_semaphore => kill9_semaphore;
    t40_kill9_race => kill9_race;
}

async fn kill9_latch(kind: Kind) {
    kill9(kind, &["latch"; 3], 1).await
}

async fn kill9_selector(kind: Kind) {
    kill9(kind, &["selector"; 3], 1).await
}

async fn kill9_mutex(kind: Kind) {
    kill9(kind, &["mutex"; 3], 1).await
}

/// A writer holds, a reader and a writer wait: the reader holds alone once the writer is
/// killed, and the second writer waits for the reader.
async fn kill9_read_write(kind: Kind) {
    kill9(kind, &["write", "read", "write"], 1).await
}

/// Two leases: a and b hold, c and d wait; a is killed, c takes its lease, d still waits.
async fn kill9_semaphore(kind: Kind) {
    kill9(kind, &["semaphore:2"; 4], 2).await
}

async fn kill9_race(kind: Kind) {
    kill9(kind, &["race"; 3], 1).await
}

/// Every member a Rust participant process.
async fn kill9(kind: Kind, recipes: &[&str], holders: usize) {
    let members: Vec<_> = recipes.iter().map(|r| (Lang::Rust, *r)).collect();
    kill9_of(kind, "t40", &members, holders).await
}
