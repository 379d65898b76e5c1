//! A server behind the client's last zxid refuses to resume the session (ZooKeeper closes the
//! connection during the handshake: "client must try another server"), and the client moves
//! on to one that is not behind, on the same session. Reproduced with two standalone
//! ZooKeeper 3.8 servers: the session lives on `ahead`, whose zxid is well past that of the
//! empty `behind`; `ahead` is stopped, the client is refused by `behind` and counts it
//! (`rzk_client_connect_attempts_total{outcome="refused"}`), then `ahead` comes back.

// Apache ZooKeeper only: the fast tier leaves it out.
#![cfg(feature = "zookeeper-tests")]

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use rzk_client::{Acls, Client, CreateMode, SessionState, CONNECT_ATTEMPTS};
use rzk_testkit::tempdir::TempDir;
use rzk_testkit::wait::{eventually, within};
use rzk_testkit::zookeeper::{Settings, ZooKeeper};

const T: Duration = Duration::from_secs(10);
const LIMIT: Duration = Duration::from_secs(60);
/// Writes on `ahead`, so its zxid is past every one `behind` can reach meanwhile.
const WRITES: usize = 50;

fn blocking<R>(f: impl FnOnce() -> R) -> R {
    tokio::task::block_in_place(f)
}

/// The connect attempts by outcome since the test began (the debugging recorder resets a
/// counter on each snapshot, so the totals add them up).
fn attempts(outcome: &str) -> u64 {
    static SNAP: OnceLock<Snapshotter> = OnceLock::new();
    static TOTALS: Mutex<Option<HashMap<String, u64>>> = Mutex::new(None);
    let snap = SNAP.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snap = recorder.snapshotter();
        recorder.install().expect("no other recorder in this test binary");
        snap
    });
    let mut totals = TOTALS.lock().unwrap();
    let totals = totals.get_or_insert_with(HashMap::new);
    for (key, _, _, value) in snap.snapshot().into_vec() {
        let key = key.key();
        if key.name() != CONNECT_ATTEMPTS {
            continue;
        }
        let label = key.labels().find(|l| l.key() == "outcome").map(|l| l.value().to_owned());
        if let (Some(label), DebugValue::Counter(n)) = (label, value) {
            *totals.entry(label).or_default() += n;
        }
    }
    totals.get(outcome).copied().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_behind_the_client_s_zxid_refuses_it_and_the_client_moves_on() {
    attempts("refused");
    let settings = Settings { tick_ms: 200, container_check_ms: 60_000 };
    let (d1, d2) = (TempDir::new("rzk-client-ahead"), TempDir::new("rzk-client-behind"));
    let mut ahead = blocking(|| ZooKeeper::start(d1.path(), &settings));
    let behind = blocking(|| ZooKeeper::start(d2.path(), &settings));
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let marker = Client::connect(&ahead.hosts()).await.unwrap();
    marker.create("/ahead", b"", &open).await.unwrap();
    marker.close().await;

    // A session on `ahead`: the client's shuffle may place it on `behind`, so try again.
    let hosts = format!("{},{}", ahead.hosts(), behind.hosts());
    let mut on_ahead = None;
    for _ in 0..40 {
        let c = Client::connector().with_session_timeout(T).connect(&hosts).await.unwrap();
        if c.check_stat("/ahead").await.unwrap().is_some() {
            on_ahead = Some(c);
            break;
        }
        c.close().await;
    }
    let c = on_ahead.expect("a session on `ahead` within 40 tries");
    for i in 0..WRITES {
        c.create(&format!("/ahead/n{i}"), b"", &open).await.unwrap();
    }
    let id = c.session_id();
    let refused_before = attempts("refused");

    blocking(|| ahead.stop());
    eventually(LIMIT, "`behind` refuses the session twice", || {
        attempts("refused") >= refused_before + 2
    })
    .await;
    assert_eq!(c.state(), SessionState::Disconnected, "not resumed on a server behind it");
    blocking(|| ahead.resume());
    let stat = within(LIMIT, "served again", c.check_stat("/ahead/n0")).await;
    assert!(stat.unwrap().is_some(), "served by `ahead`, where the data is");
    assert_eq!(c.session_id(), id, "the same session");
}
