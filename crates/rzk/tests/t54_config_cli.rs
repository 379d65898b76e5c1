//! `rzk config` against the in-process server and Apache ZooKeeper: `set` creates the node
//! and its parents and prints the version, `get` (and `--json`) reads it, `set --version`
//! writes over that version only (exit 3 when it moved), `get` of an absent node exits 2.
//! `watch --exec` runs its command on every change with the data on standard input and
//! `RZK_CONFIG_VERSION`, never two at once, and its last run has the latest value.
//! `watch` without `--exec` prints "VERSION DATA" per change and ends on the latest value.
//! Seed 002's config update flow: several `watch --exec` processes and writers racing with
//! `set --version` (the losers exit 3) all end on the last written value. `set` on a missing
//! node with `--version`, or on a node whose ACL forbids it, exits 2 with the reason.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{rzk, stdout_ok, Kind, Server};

both_servers! {
    config_get_set => set_get_and_compare_and_set;
    config_watch_exec => watch_exec_runs_one_at_a_time_and_ends_on_the_latest;
    config_watch_prints => watch_prints_each_version_and_ends_on_the_latest;
    config_update_flow => watchers_and_compare_and_set_writers_converge;
    config_set_errors => set_on_a_missing_stale_or_denied_node_says_why;
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

fn watch_prints_each_version_and_ends_on_the_latest(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    let path = "/config/printed";
    let mut watcher = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", &cs, "config", "watch", path])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines =
        rzk_testkit::lines::Lines::capture("rzk config watch", watcher.stdout.take().unwrap());
    let texts = || lines.all().into_iter().map(|(_, l)| l).collect::<Vec<_>>();
    wait_for(|| texts().first().is_some_and(|l| l == "-1 "), "the absent node's line");
    for i in 0..10 {
        stdout_ok(&cs, &["config", "set", path, &format!("value {i}")]);
    }
    wait_for(|| texts().last().is_some_and(|l| l == "9 value 9"), "the latest value's line");
    let _ = watcher.kill();
    let _ = watcher.wait();
    let seen = texts();
    let versions: Vec<i32> =
        seen.iter().map(|l| l.split(' ').next().unwrap().parse().unwrap()).collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "in order, none twice: {seen:?}");
    for line in &seen[1..] {
        let (v, data) = line.split_once(' ').unwrap();
        assert_eq!(data, format!("value {v}"), "each version with its own value: {seen:?}");
    }
}

/// Seed 002's flow: services watch the config node and reload on every change (here: record
/// it); operators update it by reading its version and writing over that version only.
fn watchers_and_compare_and_set_writers_converge(kind: Kind) {
    const WATCHERS: usize = 3;
    const WRITERS: usize = 2;
    const WRITES_EACH: usize = 5;
    let server = Server::start(kind);
    let cs = server.hosts();
    let path = "/config/database";
    stdout_ok(&cs, &["config", "set", path, "start"]);
    let dir = rzk_testkit::tempdir::TempDir::new("rzk-config-flow");
    let exec = "echo \"$RZK_CONFIG_VERSION $(cat)\" >> \"$LOG\"";
    let mut watchers: Vec<_> = (0..WATCHERS)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_rzk"))
                .args(["--connect", &cs, "config", "watch", path, "--exec", exec])
                .env("LOG", dir.path().join(format!("w{i}")))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let log =
        |i: usize| std::fs::read_to_string(dir.path().join(format!("w{i}"))).unwrap_or_default();
    for i in 0..WATCHERS {
        wait_for(|| log(i).starts_with("0 start"), "a watcher's first run");
    }
    // Writers race: each reads the version, then writes over it; a lost race exits 3 and is
    // retried from a fresh read.
    let conflicts: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let cs = &cs;
                s.spawn(move || {
                    let mut conflicts = 0;
                    for n in 0..WRITES_EACH {
                        loop {
                            let got = stdout_ok(cs, &["config", "get", "--json", path]);
                            let version = json_version(&got);
                            let value = format!("writer {w} write {n}");
                            let v = version.to_string();
                            let out = rzk(cs, &["config", "set", "--version", &v, path, &value]);
                            match out.status.code() {
                                Some(0) => break,
                                Some(3) => conflicts += 1,
                                other => panic!("set --version exited {other:?}: {out:?}"),
                            }
                        }
                    }
                    conflicts
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let last_version = (WRITERS * WRITES_EACH) as i32;
    let last = stdout_ok(&cs, &["config", "get", "--json", path]);
    assert_eq!(json_version(&last), last_version, "every write applied once: {last}");
    let last_value = stdout_ok(&cs, &["config", "get", path]);
    let want = format!("{last_version} {}", last_value.trim_end());
    for i in 0..WATCHERS {
        wait_for(|| log(i).lines().last() == Some(want.as_str()), "a watcher's latest run");
    }
    for w in &mut watchers {
        let _ = w.kill();
        let _ = w.wait();
    }
    // Not asserted above 0: two writers may happen never to collide on a fast machine.
    eprintln!("compare-and-set conflicts retried: {conflicts}");
}

fn json_version(doc: &str) -> i32 {
    let rest = doc.split("\"version\":").nth(1).expect("a version");
    rest.split(|c: char| !c.is_ascii_digit() && c != '-').next().unwrap().parse().unwrap()
}

fn set_on_a_missing_stale_or_denied_node_says_why(kind: Kind) {
    use rzk_client::{Acl, AuthId, Permission};
    let server = Server::start(kind);
    let cs = server.hosts();
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let missing = rzk(&cs, &["config", "set", "--version", "0", "/config/missing", "x"]);
    assert_eq!(missing.status.code(), Some(2), "missing node: {missing:?}");
    assert!(stderr(&missing).contains("no node: /config/missing"), "{}", stderr(&missing));
    assert_eq!(rzk(&cs, &["config", "get", "/config/missing"]).status.code(), Some(2));

    stdout_ok(&cs, &["config", "set", "/config/stale", "one"]);
    stdout_ok(&cs, &["config", "set", "/config/stale", "two"]);
    let stale = rzk(&cs, &["config", "set", "--version", "0", "/config/stale", "three"]);
    assert_eq!(stale.status.code(), Some(3), "stale version: {stale:?}");
    assert!(stderr(&stale).contains("no longer at version 0"), "{}", stderr(&stale));
    assert_eq!(stdout_ok(&cs, &["config", "get", "/config/stale"]), "two\n", "not written");

    stdout_ok(&cs, &["config", "set", "/config/locked", "kept"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let raw = rt.block_on(rzk_client::Client::connect(&cs)).unwrap();
    let acl = [Acl::new(Permission::READ, AuthId::anyone())];
    rt.block_on(raw.set_acl("/config/locked", &acl, None)).unwrap();
    for args in [
        &["config", "set", "/config/locked", "new"][..],
        &["config", "set", "--version", "0", "/config/locked", "new"][..],
    ] {
        let denied = rzk(&cs, args);
        assert_eq!(denied.status.code(), Some(2), "denied: {denied:?}");
        assert!(stderr(&denied).contains("not authorized: /config/locked"), "{}", stderr(&denied));
    }
    assert_eq!(stdout_ok(&cs, &["config", "get", "/config/locked"]), "kept\n", "not written");
}

fn wait_for(mut f: impl FnMut() -> bool, what: &str) {
    let end = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < end, "no {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
