//! Crash consistency of the log and snapshots on a disk that loses unsynced bytes.
//!
//! A seeded workload drives a real `Core`; its transactions go to the log in batches, with a
//! sync per batch as the server does. After a simulated power loss, recovery must give exactly
//! the state the live core had at some zxid between the last sync and the last append, and
//! damage to synced data must stop recovery with a clear error, never silently lose a write.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rzk_core::{Config, Core, Now, State, Txn};
use rzk_proto::jute::Writer;
use rzk_proto::{Acl, ConnectRequest, CreateOp, CreateRequest, MultiOp, Request};
use rzk_storage::{
    purge, recover, CrashMode, CrashStorage, LogEnd, LogWriter, SnapshotWriter, Storage,
    StorageError,
};

const DIR: &str = "/data";

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A core plus three client connections that issue random writes.
struct Workload {
    core: Core,
    rng: Rng,
    now: Now,
    xid: i32,
    /// Every transaction the core produced, in order.
    txns: Vec<Txn>,
}

impl Workload {
    fn new(seed: u64) -> Workload {
        let now = Now { mono_ms: 0, wall_ms: 1_700_000_000_000 };
        let mut core = Core::new(Config::with_tick_ms(100), now);
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        for conn in 1..=3 {
            core.open(conn, peer);
            let mut w = Writer::new();
            ConnectRequest::new_session(2000).write(&mut w);
            core.receive(conn, &w.into_inner(), now).unwrap();
        }
        let mut w = Workload { core, rng: Rng(seed | 1), now, xid: 0, txns: Vec::new() };
        w.collect();
        w
    }

    fn collect(&mut self) {
        self.txns.extend(self.core.drain_txns());
        let last = self.core.state().last_zxid();
        self.core.mark_durable(last);
        while self.core.poll_output().is_some() {}
    }

    fn send(&mut self, conn: u64, req: Request) {
        self.xid += 1;
        let frame = req.to_frame(self.xid);
        let _ = self.core.receive(conn, &frame[4..], self.now);
    }

    /// One random write; returns the transactions it produced.
    fn step(&mut self) -> Vec<Txn> {
        let before = self.txns.len();
        let conn = 1 + self.rng.below(3);
        let dir = format!("/d{}", self.rng.below(4));
        let leaf = format!("{dir}/n{}", self.rng.below(8));
        let create = |path: String, flags: i32, data: Vec<u8>| {
            Request::Create(CreateRequest {
                op: CreateOp::Create2,
                path,
                data: Some(data),
                acl: Acl::open(),
                flags,
                ttl_ms: -1,
            })
        };
        let req = match self.rng.below(10) {
            0 => create(dir, 0, vec![]),
            1..=3 => create(leaf, (self.rng.below(4)) as i32, vec![7; self.rng.below(40) as usize]),
            4 => Request::Delete { path: leaf, version: -1 },
            5 | 6 => Request::SetData { path: leaf, data: Some(vec![1; 9]), version: -1 },
            7 => Request::Multi(vec![
                MultiOp::Create(CreateRequest {
                    op: CreateOp::Create,
                    path: format!("{leaf}m"),
                    data: None,
                    acl: Acl::open(),
                    flags: 2,
                    ttl_ms: -1,
                }),
                MultiOp::SetData { path: dir, data: Some(vec![2]), version: -1 },
            ]),
            8 => Request::SetAcl { path: leaf, acl: Acl::open(), version: -1 },
            _ => {
                // Ephemerals go when their session closes; reconnect with a fresh session.
                if self.rng.below(4) == 0 {
                    self.send(conn, Request::CloseSession);
                    self.core.closed(conn);
                    self.core.open(conn, "127.0.0.1:1".parse().unwrap());
                    let mut w = Writer::new();
                    ConnectRequest {
                        protocol_version: 0,
                        last_zxid_seen: 0,
                        timeout_ms: 2000,
                        session_id: 0,
                        passwd: vec![0; 16],
                        read_only: None,
                    }
                    .write(&mut w);
                    let _ = self.core.receive(conn, &w.into_inner(), self.now);
                    self.collect();
                    return self.txns[before..].to_vec();
                }
                create(leaf, 1, vec![3])
            }
        };
        self.send(conn, req);
        self.collect();
        self.txns[before..].to_vec()
    }
}

/// The state after replaying the first transactions up to `zxid`.
fn replay_to(txns: &[Txn], zxid: i64) -> State {
    let mut s = State::new();
    for t in txns.iter().filter(|t| t.zxid <= zxid) {
        s.apply(t).unwrap();
    }
    s
}

fn writer(storage: &Arc<CrashStorage>, segment_bytes: u64) -> LogWriter {
    let end = LogEnd { segment: None, offset: 0, last_zxid: 0 };
    LogWriter::open(storage.clone(), Path::new(DIR), segment_bytes, &end).unwrap()
}

/// A fresh disk, a writer on it with small segments, and a workload whose opening
/// transactions are already appended.
fn started(seed: u64, segment_bytes: u64) -> (Arc<CrashStorage>, LogWriter, Workload) {
    let storage = Arc::new(CrashStorage::new());
    let mut log = writer(&storage, segment_bytes);
    let w = Workload::new(seed);
    for txn in &w.txns {
        log.append(txn).unwrap();
    }
    (storage, log, w)
}

/// Appends and syncs one transaction after `after_zxid` to a reopened log, then checks that
/// a second recovery reaches it: the repaired log accepts new writes.
fn append_after_recovery(disk: &CrashStorage, segment_bytes: u64, end: &LogEnd, what: &str) {
    let mut log =
        LogWriter::open(Arc::new(disk.clone()), Path::new(DIR), segment_bytes, end).unwrap();
    let zxid = end.last_zxid + 1;
    let next = Txn { zxid, time_ms: 1, session_id: 0, op: rzk_core::TxnOp::Error { err: -110 } };
    log.append(&next).unwrap();
    log.sync().unwrap();
    let again = recover(disk, Path::new(DIR), Path::new(DIR)).unwrap();
    assert_eq!(again.state.last_zxid(), zxid, "{what}");
}

fn assert_same(a: &State, b: &State, what: &str) {
    if let Some(d) = a.difference(b) {
        panic!("{what}: {d}");
    }
}

#[test]
fn the_log_round_trips_across_segments() {
    let (storage, mut log, mut w) = started(7, 4096);
    for _ in 0..600 {
        for txn in w.step() {
            log.append(&txn).unwrap();
        }
        if w.rng.below(3) == 0 {
            log.sync().unwrap();
        }
    }
    log.sync().unwrap();
    let segments = storage.list(Path::new(DIR)).unwrap();
    assert!(segments.len() > 3, "small segments roll: {segments:?}");
    let rec = recover(&*storage, Path::new(DIR), Path::new(DIR)).unwrap();
    assert_same(&rec.state, w.core.state(), "recovered vs live");
    assert_eq!(rec.log_end.last_zxid, w.core.state().last_zxid());
}

/// Appends the workload's next steps, syncing each and preparing a spare whenever the writer
/// asks; returns how many rolls took a spare.
fn append_with_spares(log: &mut LogWriter, storage: &CrashStorage, w: &mut Workload) -> usize {
    let spare = Path::new(DIR).join(rzk_storage::log::SPARE_NAME);
    let has_spare = |s: &CrashStorage| s.read(&spare).is_ok();
    let mut taken = 0;
    for _ in 0..400 {
        let before = has_spare(storage);
        for txn in w.step() {
            log.append(&txn).unwrap();
        }
        log.sync().unwrap();
        taken += usize::from(before && !has_spare(storage));
        if log.take_spare_request() {
            assert!(rzk_storage::prepare_spare(storage, Path::new(DIR), 4096, 0).unwrap());
            assert_eq!(storage.read(&spare).unwrap(), vec![0; 4096]);
        }
    }
    taken
}

#[test]
fn segments_taken_from_spares_recover_like_sparse_ones() {
    let (storage, mut log, mut w) = started(11, 4096);
    let taken = append_with_spares(&mut log, &storage, &mut w);
    assert!(taken >= 3, "only {taken} rolls took a spare");
    // A spare waiting for the next roll is not a segment to recovery.
    storage.sync_dir(Path::new(DIR)).unwrap();
    let after = storage.crash(CrashMode::SyncedOnly);
    let rec = recover(&after, Path::new(DIR), Path::new(DIR)).unwrap();
    assert_same(&rec.state, w.core.state(), "recovered vs live");
}

#[test]
fn a_crash_while_a_spare_becomes_a_segment_loses_nothing_synced() {
    for header_synced in [false, true] {
        let (storage, mut log, mut w) = started(5, 4096);
        let synced = log.sync().unwrap();
        assert!(rzk_storage::prepare_spare(&*storage, Path::new(DIR), 4096, 0).unwrap());
        // The spare's name made durable by some other directory sync (a snapshot's).
        storage.sync_dir(Path::new(DIR)).unwrap();
        // The roll syncs the old segment, renames the spare, writes and syncs the header,
        // then syncs the directory: freeze the disk before the rename or after the header.
        storage.freeze_after_syncs(storage.syncs() + 1 + u64::from(header_synced));
        let rolled = (0..10_000).any(|_| w.step().iter().any(|t| log.append(t).is_err()));
        assert!(rolled, "the roll hit the frozen disk");
        let after = storage.crash(CrashMode::SyncedOnly);
        let rec = recover(&after, Path::new(DIR), Path::new(DIR))
            .unwrap_or_else(|e| panic!("header synced {header_synced}: {e}"));
        assert!(rec.state.last_zxid() >= synced, "header synced {header_synced}");
        // The reopened writer drops the half-named spare and carries on.
        let what = format!("header synced {header_synced}");
        append_after_recovery(&after, 4096, &rec.log_end, &what);
        let names = after.list(Path::new(DIR)).unwrap();
        assert!(!names.iter().any(|n| n.starts_with("log.spare")), "{names:?}");
    }
}

#[test]
fn a_torn_tail_is_cut_and_nothing_synced_is_lost() {
    let (mut torn, mut kept_unsynced) = (0, 0);
    for seed in 1..=40u64 {
        let (storage, mut log, mut w) = started(seed, 8192);
        let mut synced = 0;
        let steps = 50 + seed * 7;
        for i in 0..steps {
            for txn in w.step() {
                log.append(&txn).unwrap();
            }
            if i % 5 == 0 {
                synced = log.sync().unwrap();
            }
        }
        // Write the last batch but lose power before its sync completes.
        for txn in w.step() {
            log.append(&txn).unwrap();
        }
        log.write_pending().unwrap();
        let appended = log.last_zxid();
        let after = storage.crash(CrashMode::Torn { seed });
        let rec = recover(&after, Path::new(DIR), Path::new(DIR))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let got = rec.state.last_zxid();
        assert!(
            got >= synced && got <= appended,
            "seed {seed}: {got} not in [{synced}, {appended}]"
        );
        torn += usize::from(rec.report.truncated.is_some());
        kept_unsynced += usize::from(got > synced);
        assert_same(&rec.state, &replay_to(&w.txns, got), &format!("seed {seed}"));
        append_after_recovery(&after, 8192, &rec.log_end, &format!("seed {seed}"));
    }
    // The seeds really exercise torn writes and partly surviving batches.
    assert!(torn >= 10, "only {torn} of 40 crashes left a torn tail");
    assert!(kept_unsynced >= 5, "only {kept_unsynced} of 40 crashes kept unsynced records");
}

#[test]
fn corruption_of_synced_records_stops_recovery_with_file_and_offset() {
    let (storage, mut log, mut w) = started(99, 1 << 20);
    log.sync().unwrap();
    for _ in 0..100 {
        for txn in w.step() {
            log.append(&txn).unwrap();
        }
        log.sync().unwrap();
    }
    let segment = Path::new(DIR).join(rzk_storage::log::segment_name(1));
    storage.corrupt(&segment, 200).unwrap();
    match recover(&*storage, Path::new(DIR), Path::new(DIR)) {
        Err(StorageError::Corrupt { file, offset, .. }) => {
            assert_eq!(file, segment);
            assert!(offset <= 200, "offset {offset}");
        }
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

#[test]
fn fuzzy_snapshots_taken_during_writes_recover_exactly() {
    for seed in 1..=12u64 {
        let (storage, mut log, mut w) = started(seed, 1 << 16);
        for _ in 0..200 {
            for txn in w.step() {
                log.append(&txn).unwrap();
            }
        }
        log.sync().unwrap();
        // A snapshot walked in small chunks, with writes between the chunks.
        let start = w.core.state().last_zxid();
        let mut snap = SnapshotWriter::begin(
            storage.clone(),
            Path::new(DIR),
            start,
            w.core.state().sessions(),
        )
        .unwrap();
        let mut cursor = rzk_core::state::SnapshotCursor::new();
        loop {
            let more = cursor.next_chunk(w.core.state(), 3, |p, n, acl| snap.node(p, n, acl));
            snap.flush().unwrap();
            for txn in w.step() {
                log.append(&txn).unwrap();
            }
            if !more {
                break;
            }
        }
        let end = w.core.state().last_zxid();
        log.sync().unwrap();
        snap.finish(end).unwrap();
        for _ in 0..50 {
            for txn in w.step() {
                log.append(&txn).unwrap();
            }
        }
        log.sync().unwrap();
        let rec = recover(&*storage, Path::new(DIR), Path::new(DIR)).unwrap();
        assert!(rec.report.snapshot.is_some(), "seed {seed}: snapshot used");
        assert_same(&rec.state, w.core.state(), &format!("seed {seed}: snapshot + log vs live"));

        // Purge keeps what recovery needs.
        purge(&*storage, Path::new(DIR), Path::new(DIR), 1).unwrap();
        let rec = recover(&*storage, Path::new(DIR), Path::new(DIR)).unwrap();
        assert_same(&rec.state, w.core.state(), &format!("seed {seed}: after purge"));

        // A damaged snapshot is skipped in favour of the full log (nothing was purged before
        // the first snapshot, so the log still starts at zxid 1).
        let snap_path = rec.report.snapshot.clone().unwrap();
        let bytes = storage.read(&snap_path).unwrap();
        storage.corrupt(&snap_path, bytes.len() / 2).unwrap();
        match recover(&*storage, Path::new(DIR), Path::new(DIR)) {
            Ok(rec) => {
                assert_eq!(rec.report.skipped_snapshots.len(), 1);
                assert_same(&rec.state, w.core.state(), &format!("seed {seed}: without snapshot"));
            }
            Err(StorageError::Gap { .. }) => {} // the log before the snapshot was purged
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
}

#[test]
fn a_snapshot_is_invisible_until_finished() {
    let (storage, mut log, mut w) = started(5, 1 << 16);
    for _ in 0..100 {
        for txn in w.step() {
            log.append(&txn).unwrap();
        }
    }
    log.sync().unwrap();
    storage.sync_dir(Path::new(DIR)).unwrap();
    let mut snap = SnapshotWriter::begin(
        storage.clone(),
        Path::new(DIR),
        w.core.state().last_zxid(),
        w.core.state().sessions(),
    )
    .unwrap();
    let mut cursor = rzk_core::state::SnapshotCursor::new();
    cursor.next_chunk(w.core.state(), 10, |p, n, acl| snap.node(p, n, acl));
    snap.flush().unwrap();
    // Power fails mid-snapshot: recovery ignores the .tmp file and uses the log.
    let after = storage.crash(CrashMode::Torn { seed: 3 });
    let rec = recover(&after, Path::new(DIR), Path::new(DIR)).unwrap();
    assert!(rec.report.snapshot.is_none());
    assert_same(&rec.state, w.core.state(), "log only");
}
