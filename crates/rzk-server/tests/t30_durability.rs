//! Durable servers: acknowledged writes and sessions survive restarts; a dying disk stops the
//! server instead of acknowledging what it could not store.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_server::{DiskConfig, TestServer};
use rzk_storage::{CrashStorage, Storage};
use rzk_testkit::tempdir::TempDir;
use rzk_testkit::wait::within;
use zk::{Acls, CreateMode, EventType};
use zookeeper_client as zk;

/// How long a test waits for what a server does on its own (an expiry, a snapshot).
const WAIT: Duration = Duration::from_secs(15);

fn persistent() -> zk::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

#[tokio::test]
async fn data_survives_restarts_and_zxids_keep_growing() {
    let tmp = TempDir::new("rzk-t30-data");
    let dir = tmp.join("data");
    let mut s = TestServer::builder().tick_ms(100).data_dir(&dir).start().unwrap();
    let c = zk::Client::connect(&s.connect_string()).await.unwrap();
    c.create("/app", b"v1", &persistent()).await.unwrap();
    for i in 0..50 {
        c.create(&format!("/app/n{i:02}"), format!("{i}").as_bytes(), &persistent()).await.unwrap();
    }
    let before = c.set_data("/app", b"v2", None).await.unwrap();
    drop(c);

    for round in 0..3 {
        s.restart().unwrap();
        let c = zk::Client::connect(&s.connect_string()).await.unwrap();
        let (data, stat) = c.get_data("/app").await.unwrap();
        assert_eq!(data, b"v2", "round {round}");
        assert_eq!(stat.mzxid, before.mzxid);
        assert_eq!(c.list_children("/app").await.unwrap().len(), 50);
        // New writes get zxids above everything before the restart.
        let (stat, _) = c.create(&format!("/after{round}"), b"", &persistent()).await.unwrap();
        assert!(stat.czxid > before.mzxid);
    }
}

#[tokio::test]
async fn a_session_resumed_within_its_timeout_keeps_its_ephemerals() {
    let tmp = TempDir::new("rzk-t30-sessions");
    let dir = tmp.join("data");
    let mut s = TestServer::builder().tick_ms(500).data_dir(&dir).start().unwrap();
    let c = support::connect(&s, Duration::from_secs(8), false).await;
    c.create("/lock", b"", &CreateMode::Ephemeral.with_acls(Acls::anyone_all())).await.unwrap();
    let id = c.session_id();
    let mut state = c.state_watcher();

    // A session whose client never comes back.
    let gone = support::connect(&s, Duration::from_secs(2), true).await;
    gone.create("/orphan", b"", &CreateMode::Ephemeral.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    drop(gone);

    s.restart().unwrap();
    // The client reconnects by itself with its old session id and password.
    within(WAIT, "reconnect", async {
        loop {
            if state.changed().await == zk::SessionState::SyncConnected {
                break;
            }
        }
    })
    .await;
    assert_eq!(c.session_id(), id);
    let (_, stat) = c.get_data("/lock").await.unwrap();
    assert_eq!(stat.ephemeral_owner, id.0);

    // The session that did not come back expires after the restart, and its ephemeral goes.
    let started = Instant::now();
    within(WAIT, "orphan expiry", async {
        while c.check_stat("/orphan").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(4), "expired in {:?}", started.elapsed());
}

#[tokio::test]
async fn snapshots_and_purge_keep_recovery_exact() {
    let tmp = TempDir::new("rzk-t30-snapshots");
    let dir = tmp.join("data");
    let mut disk = DiskConfig::new(&dir);
    disk.snap_count = 40;
    disk.segment_bytes = 16 * 1024;
    let mut s = TestServer::builder().tick_ms(100).disk(disk.clone()).start().unwrap();
    let c = zk::Client::connect(&s.connect_string()).await.unwrap();
    c.create("/s", b"", &persistent()).await.unwrap();
    for i in 0..400 {
        c.create(&format!("/s/{i}"), &[i as u8; 100], &persistent()).await.unwrap();
        if i % 3 == 0 {
            c.delete(&format!("/s/{i}"), None).await.unwrap();
        }
    }
    let (_, expected) = c.get_children("/s").await.unwrap();
    drop(c);
    let snaps = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("snapshot."))
            .count()
    };
    within(WAIT, "a snapshot", async {
        while snaps() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    rzk_storage::purge(&*disk.storage, &disk.snap_dir, &disk.log_dir, 2).unwrap();
    s.restart().unwrap();
    let c = zk::Client::connect(&s.connect_string()).await.unwrap();
    let (children, stat) = c.get_children("/s").await.unwrap();
    assert_eq!(children.len(), 266);
    assert_eq!(stat, expected);
}

/// Snapshots of a growing tree are spaced by the log written since the last one: populating
/// takes a handful of snapshots instead of one per `snap_count` writes, and recovery stays
/// exact either way.
#[tokio::test]
async fn a_growing_tree_is_snapshotted_geometrically() {
    const NODES: usize = 2000;
    let mut counts = Vec::new();
    for pct in [0, 100] {
        let tmp = TempDir::new(&format!("rzk-t30-geometric-{pct}"));
        let dir = tmp.join("data");
        let mut disk = DiskConfig::new(&dir);
        disk.snap_count = 20;
        disk.snapshot_log_pct_min = pct;
        disk.snapshot_write_bytes_per_sec_max = 0;
        let mut s = TestServer::builder().tick_ms(100).disk(disk).start().unwrap();
        let c = zk::Client::connect(&s.connect_string()).await.unwrap();
        c.create("/g", b"", &persistent()).await.unwrap();
        for i in 0..NODES {
            c.create(&format!("/g/{i:05}"), &[7; 100], &persistent()).await.unwrap();
        }
        drop(c);
        let files = || {
            let names: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("snapshot."))
                .collect();
            let busy = names.iter().any(|n| n.ends_with(".tmp"));
            (names.len(), busy)
        };
        // The last snapshot may still be in progress.
        let count = within(WAIT, "snapshots to settle", async {
            loop {
                let (n, busy) = files();
                tokio::time::sleep(Duration::from_millis(100)).await;
                if !busy && files() == (n, false) {
                    return n;
                }
            }
        })
        .await;
        s.restart().unwrap();
        let c = zk::Client::connect(&s.connect_string()).await.unwrap();
        let (_, stat) = c.get_data("/g").await.unwrap();
        assert_eq!(stat.num_children as usize, NODES);
        drop(c);
        drop(s);
        counts.push(count);
    }
    // By count alone a snapshot is due every 11-20 writes (~130), but one that comes due while
    // the one before is still being written waits for it, so on a loaded machine far fewer are
    // taken (45 on a CI run): the policy itself is pinned by the unit test in durable.rs, and
    // here only its wiring. Spaced by size: the tree roughly doubles between snapshots, so
    // about log2(2000 / 15) + 1 = 8, whatever the machine.
    assert!(
        counts[0] > counts[1],
        "snapshots by count alone {} vs by size {}",
        counts[0],
        counts[1]
    );
    assert!(counts[1] <= 14, "snapshots spaced by size: {}", counts[1]);
}

#[tokio::test]
async fn a_dying_disk_stops_the_server_without_acknowledging() {
    // A 2 s session and the client's connect timeout: time bounds, so a heavy slot.
    let _slot = rzk_testkit::slots::heavy_async().await;
    let storage = CrashStorage::new();
    let mut disk = DiskConfig::new("/data");
    disk.storage = Arc::new(storage.clone());
    let s = TestServer::builder().tick_ms(100).disk(disk).start().unwrap();
    let c = support::connect(&s, Duration::from_secs(2), false).await;
    c.create("/ok", b"", &persistent()).await.unwrap();
    storage.freeze_after_syncs(storage.syncs());
    let (_, _, deleted) = c.get_and_watch_data("/ok").await.unwrap();
    let write = tokio::time::timeout(Duration::from_secs(5), c.delete("/ok", None)).await;
    assert!(!matches!(write, Ok(Ok(()))), "a write the disk could not store was acknowledged");
    // Nor was the change announced.
    assert!(tokio::time::timeout(Duration::from_millis(300), deleted.changed())
        .await
        .map_or(true, |e| e.event_type != EventType::NodeDeleted));
    // What the disk kept recovers cleanly and still has /ok.
    let after = storage.crash(rzk_storage::CrashMode::SyncedOnly);
    let rec =
        rzk_storage::recover(&after, std::path::Path::new("/data"), std::path::Path::new("/data"))
            .unwrap();
    assert!(rec.state.node("/ok").is_some());
    let _ = after.list(std::path::Path::new("/data"));
}
