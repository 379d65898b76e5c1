//! Measures recovery time for N znodes (default 1,000,000) on the real file system: once by
//! replaying the whole log, once from a snapshot.
//!
//!     cargo run --release -p rzk-storage --example recovery_time -- [N] [DIR]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rzk_core::state::SnapshotCursor;
use rzk_core::{Txn, TxnOp};
use rzk_proto::Acl;
use rzk_storage::{FsStorage, LogEnd, LogWriter, SnapshotWriter};

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: i64 = args.next().map_or(1_000_000, |s| s.parse().expect("N"));
    let dir =
        args.next().map_or_else(|| std::env::temp_dir().join("rzk-recovery-time"), PathBuf::from);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let storage = Arc::new(FsStorage);

    // 1000 parents with 1000 children each, 16-byte data: ZooKeeper's populate shape.
    let started = Instant::now();
    let end = LogEnd { segment: None, offset: 0, last_zxid: 0 };
    let mut log =
        LogWriter::open(storage.clone(), &dir, rzk_storage::DEFAULT_SEGMENT_BYTES, &end).unwrap();
    let mut zxid = 0;
    let per_dir = 1000;
    let mut child_count = 0;
    while zxid < n {
        let d = zxid / (per_dir + 1);
        let op = if zxid % (per_dir + 1) == 0 {
            TxnOp::Create {
                path: format!("/d{d}"),
                data: Some(vec![0; 16]),
                acl: Acl::open(),
                ephemeral_owner: 0,
                parent_cversion: (d + 1) as i32,
            }
        } else {
            child_count += 1;
            let c = zxid % (per_dir + 1);
            TxnOp::Create {
                path: format!("/d{d}/n{c:06}"),
                data: Some(vec![7; 16]),
                acl: Acl::open(),
                ephemeral_owner: 0,
                parent_cversion: c as i32,
            }
        };
        zxid += 1;
        log.append(&Txn { zxid, time_ms: 1_700_000_000_000, session_id: 0, op }).unwrap();
        if zxid % 10_000 == 0 {
            log.sync().unwrap();
        }
    }
    log.sync().unwrap();
    println!("wrote {n} creates ({child_count} leaves) in {:.1}s", started.elapsed().as_secs_f64());

    let t = Instant::now();
    let rec = rzk_storage::recover(&*storage, &dir, &dir).unwrap();
    let log_secs = t.elapsed().as_secs_f64();
    println!(
        "recovery from the log alone: {:.2}s for {} znodes ({} txns replayed), RSS {:.0} MiB",
        log_secs,
        rec.state.node_count(),
        rec.report.replayed,
        rss_mib()
    );

    let t = Instant::now();
    let st = &rec.state;
    let mut w =
        SnapshotWriter::begin(storage.clone(), &dir, st.last_zxid(), st.sessions()).unwrap();
    let mut cursor = SnapshotCursor::new();
    while cursor.next_chunk(st, 512, |p, node, acl| w.node(p, node, acl)) {
        w.flush().unwrap();
    }
    w.finish(st.last_zxid()).unwrap();
    println!("snapshot of {} znodes written in {:.2}s", st.node_count(), t.elapsed().as_secs_f64());
    drop(rec);

    let t = Instant::now();
    let rec = rzk_storage::recover(&*storage, &dir, &dir).unwrap();
    println!(
        "recovery from the snapshot: {:.2}s for {} znodes ({} txns replayed), RSS {:.0} MiB",
        t.elapsed().as_secs_f64(),
        rec.state.node_count(),
        rec.report.replayed,
        rss_mib()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
