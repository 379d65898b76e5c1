//! The recipes' metrics reach an application's recorder: a LeaderLatch handoff counts two
//! terms started and one ended (by its reason, with its duration), leaves one term held, and
//! counts the follower's watch notification and its evaluations.

mod support;

use std::sync::{Mutex, OnceLock};

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use rzk_recipes::telemetry::{
    EVALUATIONS, HOLDING, TERMS_ENDED, TERMS_STARTED, TERM_DURATION, WATCH_NOTIFICATIONS,
};
use rzk_recipes::{LatchOptions, LeaderLatch};
use support::*;

both_servers! {
    t27_latch_handoff => latch_handoff;
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

/// The series of `path`, totalled over every snapshot so far: the debugging recorder resets
/// counters and gauges (to 0) and drains histograms on each snapshot, so the totals add the
/// counts and gauge moves and keep every histogram value.
fn series_of(path: &str) -> Vec<Series> {
    static TOTALS: Mutex<Vec<Series>> = Mutex::new(Vec::new());
    let mut totals = TOTALS.lock().unwrap();
    for (key, _, _, value) in snapshotter().snapshot().into_vec() {
        let key = key.key();
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

    let before = series_of(&path);
    assert_eq!(counter(&before, TERMS_STARTED), 1, "one term started before the handoff");
    assert_eq!(counter(&before, TERMS_ENDED), 0);

    lead_a.resign().await.unwrap();
    let lead_b = b.await_leadership().await.unwrap();
    let after = series_of(&path);
    assert_eq!(counter(&after, TERMS_STARTED), 2, "a's term and b's");
    let ended = find(&after, TERMS_ENDED);
    assert_eq!(ended.len(), 1, "one reason counted");
    let reason = ended[0].labels.iter().find(|(k, _)| k == "reason").map(|(_, v)| v.as_str());
    assert_eq!(reason, Some("resigned"));
    assert_eq!(ended[0].value, Value::Counter(1));
    let recipe = ended[0].labels.iter().find(|(k, _)| k == "recipe").map(|(_, v)| v.as_str());
    assert_eq!(recipe, Some("leader_latch"));
    let holding = find(&after, HOLDING);
    assert!(
        matches!(holding.as_slice(), [s] if s.value == Value::Gauge(1.0)),
        "b holds, a no longer does"
    );
    let durations = find(&after, TERM_DURATION);
    assert!(
        matches!(durations.as_slice(), [s] if s.value == Value::Histogram(1)),
        "one term duration recorded"
    );
    assert!(counter(&after, WATCH_NOTIFICATIONS) >= 1, "b woke on a's node going");
    assert!(counter(&after, EVALUATIONS) >= 3, "a's first look, b's first and its re-look");

    drop(lead_b);
    b.close().await.unwrap();
    a.close().await.ok();
}
