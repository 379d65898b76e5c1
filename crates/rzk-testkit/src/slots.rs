//! Slots for heavy scenarios, shared by every test process on the machine.
//!
//! A heavy scenario starts JVMs (Apache ZooKeeper, an ensemble, Curator) or waits out session
//! timeouts against time bounds; on 2 cores, too many at once would break the bounds, not
//! the code. Each one holds a slot for its whole run. A slot is an exclusive `flock` on one
//! of [`slot_count`] files in [`slot_dir`]: the kernel releases it when the holder's file is
//! closed, however the process ends, so a killed test never leaves a slot taken. Threads of
//! one process contend as separate processes do, since each opens its own file.
//!
//! `cargo test` runs one test binary at a time, so its default of one slot keeps a binary's
//! scenarios one at a time, as before; `scripts/run-tests.py` runs tests side by side and
//! sets `RZK_TEST_HEAVY_SLOTS` for the whole run.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Slots when `RZK_TEST_HEAVY_SLOTS` is not set.
const SLOTS_DEFAULT: usize = 1;
/// How often a waiting scenario tries the slots again.
const RETRY: Duration = Duration::from_millis(20);

/// A held slot; dropping it frees the slot.
#[derive(Debug)]
pub struct Slot {
    _file: File,
}

/// How many heavy scenarios may run at once: `RZK_TEST_HEAVY_SLOTS`, or 1.
pub fn slot_count() -> usize {
    match std::env::var("RZK_TEST_HEAVY_SLOTS") {
        Ok(v) => match v.parse() {
            Ok(n) if n > 0 => n,
            _ => panic!("RZK_TEST_HEAVY_SLOTS={v}: not a positive number"),
        },
        Err(_) => SLOTS_DEFAULT,
    }
}

/// Where the slot files are: `RZK_TEST_SLOT_DIR`, or `rzk-test-slots` in the temporary
/// directory.
pub fn slot_dir() -> PathBuf {
    std::env::var_os("RZK_TEST_SLOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("rzk-test-slots"))
}

/// One free slot taken now, if there is one.
fn try_take() -> Option<Slot> {
    try_take_in(&slot_dir(), slot_count())
}

/// One of the `count` slots in `dir` taken now, if one is free.
fn try_take_in(dir: &Path, count: usize) -> Option<Slot> {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    (0..count).find_map(|i| {
        let file = lock_file(&dir.join(format!("slot-{i}")));
        file.try_lock().ok().map(|()| Slot { _file: file })
    })
}

/// `path` opened (created if need be, never truncated) for an `flock`, which the caller
/// takes; closing the file releases it.
pub(crate) fn lock_file(path: &Path) -> File {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// Waits for a slot, blocking the thread.
pub fn heavy() -> Slot {
    loop {
        if let Some(slot) = try_take() {
            return slot;
        }
        std::thread::sleep(RETRY);
    }
}

/// Waits for a slot without blocking the runtime.
///
/// Cancel-safe: a cancelled wait holds no slot.
pub async fn heavy_async() -> Slot {
    loop {
        if let Some(slot) = try_take() {
            return slot;
        }
        tokio::time::sleep(RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_slot_is_not_taken_again_until_dropped() {
        let dir = std::env::temp_dir().join(format!("rzk-slots-test-{}", std::process::id()));
        let held: Vec<Slot> = (0..2).map(|_| try_take_in(&dir, 2).expect("a free slot")).collect();
        assert!(try_take_in(&dir, 2).is_none(), "both slots are held");
        drop(held);
        assert!(try_take_in(&dir, 2).is_some(), "a dropped slot is free");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
