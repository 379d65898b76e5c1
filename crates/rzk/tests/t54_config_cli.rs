//! `rzk config` against the in-process server and Apache ZooKeeper: `set` creates the node
//! and its parents and prints the version, `get` (and `--json`) reads it, `set --version`
//! writes over that version only (exit 3 when it moved), `get` of an absent node exits 2.
//! `watch --exec` runs its command on every change with the data on standard input and
//! `RZK_CONFIG_VERSION`, never two at once, and its last run has the latest value.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{rzk, stdout_ok, Kind, Server};

both_servers! {
    config_get_set => set_get_and_compare_and_set;
    config_watch_exec => watch_exec_runs_one_at_a_time_and_ends_on_the_latest;
}

fn set_get_and_compare_and_set(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    let path = "/config/database";
    assert_eq!(rzk(&cs, &["config", "get", path]).status.code(), Some(2), "absent: 2");
    assert_eq!(stdout_ok(&cs, &["config", "set", path, "{\"pool\":1}"]), "0\n");
    assert_eq!(stdout_ok(&cs, &["config", "get", path]), "{\"pool\":1}\n");
    assert_eq!(
        stdout_ok(&cs, &["config", "get", "--json", path]),
        "{\"path\":\"/config/database\",\"version\":0,\"data\":\"{\\\"pool\\\":1}\"}\n"
    );
    assert_eq!(stdout_ok(&cs, &["config", "set", "--version", "0", path, "two"]), "1\n");
    let moved = rzk(&cs, &["config", "set", "--version", "0", path, "three"]);
    assert_eq!(moved.status.code(), Some(3), "a moved version exits 3");
    assert_eq!(stdout_ok(&cs, &["config", "get", path]), "two\n", "not written");
}

fn watch_exec_runs_one_at_a_time_and_ends_on_the_latest(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    let path = "/config/app";
    let dir = rzk_testkit::tempdir::TempDir::new("rzk-config-watch");
    let log = dir.path().join("log");
    // Each run: refuse to overlap (mkdir is atomic), record version and data, take a while.
    let exec = "mkdir \"$D/running\" || echo overlap >> \"$D/log\"; \
                echo \"$RZK_CONFIG_VERSION $(cat)\" >> \"$D/log\"; sleep 0.5; rmdir \"$D/running\"";
    let mut watcher = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", &cs, "config", "watch", path, "--exec", exec])
        .env("D", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for(|| read_log().starts_with("-1 "), "the run for the absent node");
    for i in 0..10 {
        stdout_ok(&cs, &["config", "set", path, &format!("value-{i}")]);
    }
    wait_for(|| read_log().lines().last() == Some("9 value-9"), "the run for the latest value");
    wait_for(|| !dir.path().join("running").exists(), "the last run's end");
    let _ = watcher.kill();
    let _ = watcher.wait();
    let text = read_log();
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines.contains(&"overlap"), "two runs at once: {lines:?}");
    let versions: Vec<i32> =
        lines.iter().map(|l| l.split(' ').next().unwrap().parse().unwrap()).collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "runs in order, none twice: {lines:?}");
    assert!(lines.len() < 11, "changes during a run coalesce: {lines:?}");
}

fn wait_for(mut f: impl FnMut() -> bool, what: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < end, "no {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
