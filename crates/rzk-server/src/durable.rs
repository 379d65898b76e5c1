//! The durable side of the shell: recovery at start-up, the log thread (group commit), fuzzy
//! snapshots in the background, and autopurge.
//!
//! ```text
//!  core (under lock) ──txns──▶ channel ──▶ log thread: append all waiting, one fdatasync,
//!                                          then mark_durable(zxid) under the lock, which
//!                                          releases the replies and events that waited
//! ```
//! While one fsync runs, every connection keeps adding transactions to the channel; the next
//! fsync covers all of them. That is the group commit.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Weak};
use std::thread;
use std::time::{Duration, Instant};

use rzk_core::state::SnapshotCursor;
use rzk_core::{State, Txn};
use rzk_storage::{LogEnd, LogWriter, SnapshotWriter, StorageError};

use crate::config::DiskConfig;
use crate::server_stats::ServerStats;

/// What the log thread and the threads it starts need from the server, and nothing more: the
/// state to snapshot, the durability report that releases outputs, and the failure flag.
pub(crate) trait LogHost: Send + Sync + 'static {
    /// Every transaction up to `zxid` is durable: release, and write, the outputs that waited
    /// for it.
    fn mark_durable(&self, zxid: i64);
    /// Runs `f` on the core's state under the core's lock; keep it short, writes wait.
    fn with_state<R>(&self, f: impl FnOnce(&State) -> R) -> R;
    /// The highest zxid reported durable.
    fn durable_zxid(&self) -> i64;
    /// Stops serving for good, with the reason.
    fn fail(&self, why: String);
    /// Whether [`LogHost::fail`] has been called.
    fn is_failed(&self) -> bool;
    /// Where the log's fsync, batch and snapshot figures go.
    fn stats(&self) -> &ServerStats;
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Nodes serialised per hold of the core's lock while snapshotting: small enough that a hold
/// lasts well under a millisecond, so writes barely notice a snapshot.
const SNAPSHOT_NODES_PER_LOCK: usize = 512;

/// Recovers state from disk.
pub(crate) fn recover(disk: &DiskConfig) -> Result<(State, LogEnd), StorageError> {
    let started = Instant::now();
    let rec = rzk_storage::recover(&*disk.storage, &disk.snap_dir, &disk.log_dir)?;
    let r = &rec.report;
    for skipped in &r.skipped_snapshots {
        tracing::warn!("skipped a damaged snapshot: {skipped}");
    }
    if let Some((file, offset, bytes)) = &r.truncated {
        tracing::warn!(
            "cut a torn log tail (an unfinished, unacknowledged batch): {} at offset {offset}, {bytes} bytes",
            file.display()
        );
    }
    tracing::info!(
        snapshot = ?r.snapshot,
        snapshot_nodes = r.snapshot_nodes,
        replayed = r.replayed,
        zxid = format_args!("{:#x}", rec.state.last_zxid()),
        sessions = rec.state.sessions().len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "recovered"
    );
    Ok((rec.state, rec.log_end))
}

/// Starts the log thread (and the purge thread) and returns the channel the core's
/// transactions go into, and the log thread (none when the log could not be opened), which
/// ends once the channel's sender is dropped and the last batch is synced.
pub(crate) fn start<H: LogHost>(
    host: &Arc<H>,
    disk: DiskConfig,
    end: LogEnd,
) -> (Sender<Vec<Txn>>, Option<thread::JoinHandle<()>>) {
    let (tx, rx) = mpsc::channel();
    let log = LogWriter::open(disk.storage.clone(), &disk.log_dir, disk.segment_bytes, &end);
    let weak = Arc::downgrade(host);
    let writer = match log {
        Ok(log) => {
            let d = disk.clone();
            let spawned = thread::Builder::new()
                .name("rzk-log".into())
                .spawn(move || log_thread(weak, rx, log, d))
                .expect("spawn log thread");
            Some(spawned)
        }
        Err(e) => {
            host.fail(format!("cannot open the transaction log: {e}"));
            None
        }
    };
    if disk.purge_interval_hours > 0 {
        let weak = Arc::downgrade(host);
        thread::Builder::new()
            .name("rzk-purge".into())
            .spawn(move || purge_thread(weak, disk))
            .expect("spawn purge thread");
    }
    (tx, writer)
}

fn log_thread<H: LogHost>(
    host: Weak<H>,
    rx: Receiver<Vec<Txn>>,
    mut log: LogWriter,
    disk: DiskConfig,
) {
    let snapshotting = Arc::new(AtomicBool::new(false));
    let preparing_spare = Arc::new(AtomicBool::new(false));
    // Size of the last snapshot written by this process; 0 until one is, so the first one
    // after a start is due by count alone.
    let last_snapshot_bytes = Arc::new(AtomicU64::new(0));
    let mut log_bytes_at_snapshot = 0u64;
    let mut rng = log.last_zxid() as u64 ^ 0x5eed;
    let mut until_snapshot = next_snapshot_interval(disk.snap_count, &mut rng);
    while let Ok(first) = rx.recv() {
        let mut batch = first;
        while batch.len() < disk.group_commit_txns_max {
            match rx.try_recv() {
                Ok(more) => batch.extend(more),
                Err(_) => break,
            }
        }
        let Some(host) = host.upgrade() else { return };
        let result = batch.iter().try_for_each(|t| log.append(t)).and_then(|_| {
            let started = Instant::now();
            let synced = log.sync();
            host.stats().fsync_us.record(micros(started.elapsed()));
            host.stats().group_commit_txns.record(batch.len() as u64);
            synced
        });
        match result {
            Ok(zxid) => host.mark_durable(zxid),
            Err(e) => {
                // After a failed fsync the kernel may have dropped the dirty pages: nothing in
                // this batch may be acknowledged, and nothing later can be trusted.
                host.fail(format!("transaction log write failed: {e}"));
                return;
            }
        }
        if log.take_spare_request() {
            let disk = disk.clone();
            start_unless_busy(&preparing_spare, "rzk-spare", move || {
                let rate = disk.spare_write_bytes_per_sec_max;
                let made = rzk_storage::prepare_spare(
                    &*disk.storage,
                    &disk.log_dir,
                    disk.segment_bytes,
                    rate,
                );
                if let Err(e) = made {
                    tracing::warn!("no spare log segment, the next one starts sparse: {e}");
                }
            });
        }
        until_snapshot = until_snapshot.saturating_sub(batch.len() as u64);
        let log_since = log.appended_bytes() - log_bytes_at_snapshot;
        let due = until_snapshot == 0
            && snapshot_log_large_enough(
                log_since,
                last_snapshot_bytes.load(Ordering::Relaxed),
                disk.snapshot_log_pct_min,
            );
        // Checked before the job is built: `due` stays true for every batch while a snapshot
        // runs, and only this thread starts one.
        if due && !snapshotting.load(Ordering::SeqCst) {
            let (snap_disk, size) = (disk.clone(), last_snapshot_bytes.clone());
            let weak = Arc::downgrade(&host);
            let started = start_unless_busy(&snapshotting, "rzk-snapshot", move || {
                let Some(host) = weak.upgrade() else { return };
                let started = Instant::now();
                match take_snapshot(&*host, &snap_disk) {
                    Ok((path, bytes)) => {
                        host.stats().snapshot_ms.record(started.elapsed().as_millis() as u64);
                        size.store(bytes, Ordering::Relaxed);
                        tracing::info!(bytes, "snapshot written: {}", path.display())
                    }
                    Err(e) => {
                        tracing::error!("snapshot failed (the log still has everything): {e}")
                    }
                }
            });
            if started {
                until_snapshot = next_snapshot_interval(disk.snap_count, &mut rng);
                log_bytes_at_snapshot = log.appended_bytes();
            }
        }
    }
}

/// Runs `job` on a thread named `name` unless the job last started with `busy` is still
/// running; returns whether it started. The log thread hands its background work (snapshots,
/// spare segments) off this way so that it never waits for it nor runs two at once.
fn start_unless_busy(
    busy: &Arc<AtomicBool>,
    name: &str,
    job: impl FnOnce() + Send + 'static,
) -> bool {
    if busy.swap(true, Ordering::SeqCst) {
        return false;
    }
    let flag = busy.clone();
    thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            job();
            flag.store(false, Ordering::SeqCst);
        })
        .expect("spawn a background thread of the log");
    true
}

/// Whether the log written since the last snapshot is large enough, against that snapshot's
/// size, to make another worth its walk ([`DiskConfig::snapshot_log_pct_min`]).
fn snapshot_log_large_enough(log_since_bytes: u64, last_snapshot_bytes: u64, pct_min: u64) -> bool {
    u128::from(log_since_bytes) * 100 >= u128::from(last_snapshot_bytes) * u128::from(pct_min)
}

/// ZooKeeper takes a snapshot after a random count in [snapCount/2 + 1, snapCount], so that
/// the servers of an ensemble do not all snapshot at once.
fn next_snapshot_interval(snap_count: u64, rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    if snap_count <= 1 {
        return 1;
    }
    let half = snap_count / 2;
    half + 1 + *rng % (snap_count - half)
}

/// Writes a fuzzy snapshot: the tree is walked a few hundred nodes per lock hold while writes
/// continue, and the snapshot is sealed only once the log is durable through every
/// transaction it may contain. Returns the sealed file and its size.
fn take_snapshot(host: &impl LogHost, disk: &DiskConfig) -> Result<(PathBuf, u64), StorageError> {
    let mut writer = host
        .with_state(|st| {
            SnapshotWriter::begin(
                disk.storage.clone(),
                &disk.snap_dir,
                st.last_zxid(),
                st.sessions(),
            )
        })?
        .paced(disk.snapshot_write_bytes_per_sec_max);
    let mut cursor = SnapshotCursor::new();
    loop {
        let more = host.with_state(|st| {
            cursor.next_chunk(st, SNAPSHOT_NODES_PER_LOCK, |p, n, acl| writer.node(p, n, acl))
        });
        writer.flush()?;
        if !more {
            break;
        }
    }
    let end = host.with_state(State::last_zxid);
    while host.durable_zxid() < end {
        if host.is_failed() {
            return Err(StorageError::Gap {
                dir: disk.log_dir.clone(),
                reason: "the log failed before the snapshot's transactions were durable".into(),
            });
        }
        thread::sleep(Duration::from_millis(1));
    }
    let bytes = writer.bytes();
    Ok((writer.finish(end)?, bytes))
}

fn purge_thread<H: LogHost>(host: Weak<H>, disk: DiskConfig) {
    let interval = Duration::from_secs(disk.purge_interval_hours * 3600);
    loop {
        if host.upgrade().is_none() {
            return;
        }
        match rzk_storage::purge(
            &*disk.storage,
            &disk.snap_dir,
            &disk.log_dir,
            disk.snap_retain_count.max(3),
        ) {
            Ok(removed) if !removed.is_empty() => {
                tracing::info!(files = removed.len(), "autopurge")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("autopurge failed: {e}"),
        }
        thread::sleep(interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The snapshot policy alone, without the timing of a real disk: a tree that grows by one
    /// node per transaction, as when populating, with the log thread's bookkeeping.
    fn snapshots_while_growing(txns: u64, snap_count: u64, pct_min: u64) -> u64 {
        const LOG_BYTES_PER_TXN: u64 = 150;
        const SNAPSHOT_BYTES_PER_NODE: u64 = 130;
        let mut rng = 0x9e37_79b9_7f4a_7c15;
        let (mut until, mut log, mut log_at_snapshot) = (snap_count, 0, 0);
        let (mut last_snapshot_bytes, mut taken) = (0, 0);
        for nodes in 1..=txns {
            log += LOG_BYTES_PER_TXN;
            until -= 1;
            if until == 0
                && snapshot_log_large_enough(log - log_at_snapshot, last_snapshot_bytes, pct_min)
            {
                until = next_snapshot_interval(snap_count, &mut rng);
                log_at_snapshot = log;
                last_snapshot_bytes = nodes * SNAPSHOT_BYTES_PER_NODE;
                taken += 1;
            }
            until = until.max(1);
        }
        taken
    }

    #[test]
    fn a_growing_tree_is_snapshotted_geometrically() {
        // By count alone: one snapshot every 11-20 transactions.
        let by_count = snapshots_while_growing(2000, 20, 0);
        assert!((100..=182).contains(&by_count), "{by_count}");
        // Spaced by size: the tree roughly doubles between snapshots.
        let by_size = snapshots_while_growing(2000, 20, 100);
        assert!((6..=10).contains(&by_size), "{by_size}");
        let million = snapshots_while_growing(1_000_000, 100_000, 100);
        assert!(million <= 6, "{million}");
    }

    #[test]
    fn the_interval_is_random_in_the_upper_half_of_snap_count() {
        let mut rng = 42;
        for _ in 0..1000 {
            let n = next_snapshot_interval(100_000, &mut rng);
            assert!((50_001..=100_000).contains(&n), "{n}");
        }
        assert_eq!(next_snapshot_interval(1, &mut rng), 1);
        assert_eq!(next_snapshot_interval(0, &mut rng), 1);
        assert!((2..=3).contains(&next_snapshot_interval(3, &mut rng)));
    }
}
