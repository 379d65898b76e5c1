//! The recipes' metrics reach an application's recorder: a handoff of a LeaderLatch, a
//! LeaderSelector, a race election and a semaphore's lease counts two terms started and one
//! ended (by its reason, with its duration), leaves one term held, and counts the waiter's
//! watch notification and the evaluations, all under the recipe's own label.

mod support;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use rzk_recipes::telemetry::{
    EVALUATIONS, HOLDING, TERMS_ENDED, TERMS_STARTED, TERM_DURATION, WATCH_NOTIFICATIONS,
};
use rzk_recipes::{
    election::{
        LatchOptions, LeaderLatch, LeaderSelector, RaceElection, RaceOptions, SelectorOptions,
        Status,
    },
    lock::{InterProcessSemaphore, SemaphoreOptions},
    session::Session,
    Leadership,
};
use support::*;

both_servers! {
    t27_latch_handoff => latch_handoff;
    t27_selector_handoff => selector_handoff;
    t27_race_handoff => race_handoff;
    t27_semaphore_handoff => semaphore_handoff;
}

/// The process-wide recorder (a recorder is global; each scenario reads its own path's series).
fn snapshotter() -> &'static Snapshotter {
    static SNAP: OnceLock<Snapshotter> = OnceLock::new();
    SNAP.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snap = recorder.snapshotter();
        recorder.install().expect("no other recorder in this test binary");
        snap
    })
}

/// One series: its name, its labels other than `path`, and its value since the start.
#[derive(Clone)]
struct Series {
    name: String,
    path: String,
    labels: Vec<(String, String)>,
    value: Value,
}

/// A series' total: a counter's count, a gauge's level, a histogram's number of values.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    Counter(u64),
    Gauge(f64),
    Histogram(usize),
}

impl From<DebugValue> for Value {
    fn from(v: DebugValue) -> Value {
        match v {
            DebugValue::Counter(n) => Value::Counter(n),
            DebugValue::Gauge(g) => Value::Gauge(g.into_inner()),
            DebugValue::Histogram(v) => Value::Histogram(v.len()),
        }
    }
}

/// The recipes' series of `path`, totalled over every snapshot so far: the debugging
/// recorder resets counters and gauges (to 0) and drains histograms on each snapshot, so the
/// totals add the counts and gauge moves and keep every histogram value. The client's own
/// series (`rzk_client_*`, per session, not per path) are not the recipes'.
fn series_of(path: &str) -> Vec<Series> {
    static TOTALS: Mutex<Vec<Series>> = Mutex::new(Vec::new());
    let mut totals = TOTALS.lock().unwrap();
    for (key, _, _, value) in snapshotter().snapshot().into_vec() {
        let key = key.key();
        if !key.name().starts_with("rzk_recipes_") {
            continue;
        }
        let mut labels: Vec<(String, String)> =
            key.labels().map(|l| (l.key().to_string(), l.value().to_string())).collect();
        let at = labels.iter().position(|(k, _)| k == "path").expect("every series has a path");
        let (_, series_path) = labels.remove(at);
        let name = key.name().to_string();
        let same = |t: &&mut Series| t.name == name && t.path == series_path && t.labels == labels;
        let value = Value::from(value);
        let Some(t) = totals.iter_mut().find(same) else {
            totals.push(Series { name, path: series_path, labels, value });
            continue;
        };
        t.value = match (t.value, value) {
            (Value::Counter(a), Value::Counter(b)) => Value::Counter(a + b),
            (Value::Gauge(a), Value::Gauge(b)) => Value::Gauge(a + b),
            (Value::Histogram(a), Value::Histogram(b)) => Value::Histogram(a + b),
            (a, b) => panic!("{} changed kind: {a:?} then {b:?}", t.name),
        };
    }
    totals.iter().filter(|t| t.path == path).cloned().collect()
}

fn find<'a>(all: &'a [Series], name: &str) -> Vec<&'a Series> {
    all.iter().filter(|s| s.name == name).collect()
}

fn counter(all: &[Series], name: &str) -> u64 {
    find(all, name)
        .iter()
        .map(|s| match s.value {
            Value::Counter(n) => n,
            _ => panic!("{name} is not a counter"),
        })
        .sum()
}

fn label<'a>(s: &'a Series, key: &str) -> Option<&'a str> {
    s.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Waits until the holder and the waiter have each looked once: a handoff that starts before
/// the waiter's first look grants it on that look alone, one evaluation short of the count
/// [`assert_handoff`] expects (a gate under load released that early).
async fn first_looks(path: &str) {
    eventually(Duration::from_secs(5), "the waiter's first look", || {
        counter(&series_of(path), EVALUATIONS) >= 2
    })
    .await;
}

/// What a handoff from one holder to the next leaves in `path`'s series: two terms started,
/// one ended by `reason` with its duration recorded, one held, the waiter's watch
/// notification, and at least `evaluations` reads to decide; every series is `recipe`'s.
/// The reads are waited for: a term granted on its predecessor's deletion reads its listing
/// a little later (`GRANTED_LISTING_DELAY`), after the handoff the test saw.
async fn assert_handoff(path: &str, recipe: &str, reason: &str, evaluations: u64) {
    eventually(Duration::from_secs(5), "the next holder's listing", || {
        counter(&series_of(path), EVALUATIONS) >= evaluations
    })
    .await;
    let after = &series_of(path);
    for s in after {
        assert_eq!(label(s, "recipe"), Some(recipe), "{} of another recipe", s.name);
    }
    assert_eq!(counter(after, TERMS_STARTED), 2, "the first holder's term and the next's");
    let ended = find(after, TERMS_ENDED);
    assert_eq!(ended.len(), 1, "one reason counted");
    assert_eq!(label(ended[0], "reason"), Some(reason));
    assert_eq!(ended[0].value, Value::Counter(1));
    let holding = find(after, HOLDING);
    assert!(
        matches!(holding.as_slice(), [s] if s.value == Value::Gauge(1.0)),
        "the next holds, the first no longer does"
    );
    let durations = find(after, TERM_DURATION);
    assert!(
        matches!(durations.as_slice(), [s] if s.value == Value::Histogram(1)),
        "one term duration recorded"
    );
    assert!(counter(after, WATCH_NOTIFICATIONS) >= 1, "the waiter woke on the first's going");
}

async fn latch_handoff(kind: Kind) {
    snapshotter();
    let server = Server::start(kind, Settings::default());
    let path = test_path("t27", kind);
    let (sa, sb) = (session(&server).await, session(&server).await);
    let a = LeaderLatch::new(&sa, &path, LatchOptions::default().with_id("a")).unwrap();
    a.start().await.unwrap();
    let lead_a = a.await_leadership().await.unwrap();
    let b = LeaderLatch::new(&sb, &path, LatchOptions::default().with_id("b")).unwrap();
    b.start().await.unwrap();
    wait_children(&raw_client(&server).await, &path, 2).await;
    first_looks(&path).await;

    let before = series_of(&path);
    assert_eq!(counter(&before, TERMS_STARTED), 1, "one term started before the handoff");
    assert_eq!(counter(&before, TERMS_ENDED), 0);

    lead_a.resign().await.unwrap();
    let lead_b = b.await_leadership().await.unwrap();
    // a's first look, b's first and its re-look.
    assert_handoff(&path, "leader_latch", "resigned", 3).await;
    drop(lead_b);
    b.close().await.unwrap();
    a.close().await.ok();
}

async fn selector_handoff(kind: Kind) {
    snapshotter();
    let server = Server::start(kind, Settings::default());
    let path = test_path("t27-selector", kind);
    let (sa, sb) = (session(&server).await, session(&server).await);
    let (led_tx, mut led) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let selector = |s: &Session, id: &'static str| {
        let sel = LeaderSelector::new(s, &path, SelectorOptions::default().with_id(id)).unwrap();
        let (led_tx, release) = (led_tx.clone(), release.clone());
        // a's term ends when it is told to; b's when it is lost (at close).
        sel.start(move |l: Leadership| {
            let (led_tx, release) = (led_tx.clone(), release.clone());
            async move {
                led_tx.send(id).unwrap();
                match id {
                    "a" => release.notified().await,
                    _ => drop(l.lost().await),
                }
                Ok(())
            }
        })
        .unwrap();
        sel
    };
    let a = selector(&sa, "a");
    assert_eq!(led.recv().await, Some("a"));
    let b = selector(&sb, "b");
    wait_children(&raw_client(&server).await, &path, 2).await;
    first_looks(&path).await;
    release.notify_one();
    assert_eq!(led.recv().await, Some("b"));
    // a's first look, b's first and its re-look.
    assert_handoff(&path, "leader_selector", "resigned", 3).await;
    b.close().await.unwrap();
    a.close().await.unwrap();
}

async fn race_handoff(kind: Kind) {
    snapshotter();
    let server = Server::start(kind, Settings::default());
    let path = test_path("t27-race", kind);
    let (sa, sb) = (session(&server).await, session(&server).await);
    let a = RaceElection::new(&sa, &path, RaceOptions::default().with_id("a")).unwrap();
    a.start().await.unwrap();
    let lead_a = a.await_leadership().await.unwrap();
    let b = RaceElection::new(&sb, &path, RaceOptions::default().with_id("b")).unwrap();
    b.start().await.unwrap();
    let following = || matches!(b.status(), Status::Following { .. });
    eventually(CHILDREN_LIMIT, "b waits behind a", following).await;
    lead_a.resign().await.unwrap();
    let lead_b = b.await_leadership().await.unwrap();
    // a's look after winning, b's look at a's node and at its own after winning.
    assert_handoff(&path, "race", "resigned", 3).await;
    drop(lead_b);
    b.close().await.unwrap();
    // A race's resign closes it: a is already closed.
    assert!(a.close().await.is_err(), "a closed by its resign");
}

async fn semaphore_handoff(kind: Kind) {
    snapshotter();
    let server = Server::start(kind, Settings::default());
    let path = test_path("t27-semaphore", kind);
    let (sa, sb) = (session(&server).await, session(&server).await);
    let a = InterProcessSemaphore::new(&sa, &path, 1, SemaphoreOptions::default()).unwrap();
    let b = InterProcessSemaphore::new(&sb, &path, 1, SemaphoreOptions::default()).unwrap();
    let lease_a = a.acquire().await.unwrap();
    let waiting = tokio::spawn(async move {
        let lease = b.acquire().await.unwrap();
        (b, lease)
    });
    // b's lease node waits beside a's, and b has looked at both: released before that look,
    // b would find its node alone and hold after one look, not two.
    wait_children(&raw_client(&server).await, &format!("{path}/leases"), 2).await;
    first_looks(&path).await;
    lease_a.release().await.unwrap();
    let (b, lease_b) = waiting.await.unwrap();
    // a's look, b's look at two leases and its look at one.
    assert_handoff(&path, "semaphore", "resigned", 3).await;
    lease_b.release().await.unwrap();
    drop((a, b));
}
