//! End-to-end tests of `rzk bench`: every workload runs against an in-process server and
//! reports JSON, and bad workload arguments are refused with a clear error.

mod support;

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rzk_server::TestServer;
use support::{in_process as server, rzk, stderr, stdout};

#[test]
fn bench_reports_every_workload_as_json() {
    let s = server();
    let cs = s.connect_string();
    for (w, extra) in [
        ("get", vec!["--keys", "10"]),
        ("create", vec![]),
        ("churn", vec![]),
        ("fanout", vec!["--watchers", "5"]),
        ("fanout-persistent", vec!["--watchers", "5"]),
        ("populate", vec!["--znodes", "2000"]),
        ("handoff-event", vec!["--participants", "3", "--gap-ms", "2"]),
        ("handoff-read", vec!["--participants", "3", "--gap-ms", "2"]),
    ] {
        let mut args = vec![
            "bench",
            "--workload",
            w,
            "--duration-s",
            "0.3",
            "--sessions",
            "2",
            "--in-flight",
            "4",
            "--json",
        ];
        args.extend(extra);
        let o = rzk(&cs, &args);
        assert!(o.status.success(), "{w}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.starts_with(&format!("{{\"workload\":\"{w}\",")), "{out}");
        assert!(!out.contains("\"errors\":") || out.contains("\"errors\":0"), "{w}: {out}");
        assert!(
            !out.contains("\"ops\":0,") && !out.contains("\"rounds\":0,"),
            "{w} did nothing: {out}"
        );
    }
}

#[test]
fn session_failover_kills_the_member_it_is_given_and_times_only_the_moved_sessions() {
    // A stand-in for an ensemble member: the sessions are on the server, not on it, so none
    // is moved, and the process is gone.
    let s = server();
    let mut member = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = member.id().to_string();
    let args = ["bench", "--workload", "session-failover", "--sessions", "3", "--kill-pid", &pid];
    let o = rzk(&s.connect_string(), &[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"rounds\":0,"), "{}", stdout(&o));
    let status = member.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "SIGKILLed");
    let o = rzk(&s.connect_string(), &["bench", "--workload", "session-failover"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--kill-pid"), "{}", stderr(&o));
}

#[test]
fn bench_reports_the_election_workloads_as_json() {
    // The workloads bench-curator.py compares with Curator: each must elect, count its
    // errors and print the whole latency summary.
    let s = server();
    let cs = s.connect_string();
    for (w, extra) in [
        ("handoff", vec!["--participants", "3"]),
        ("handoff", vec!["--participants", "3", "--strategy", "herd", "--gap-ms", "5"]),
        ("selector", vec!["--participants", "3"]),
        ("failover", vec!["--trials", "1", "--session-timeout-ms", "400"]),
        ("mutex-handoff", vec!["--participants", "3"]),
        ("mutex-uncontended", vec![]),
        ("semaphore", vec!["--participants", "5", "--leases", "2"]),
        ("handoff-event", vec!["--participants", "4", "--strategy", "race"]),
        ("queue-pairs", vec!["--participants", "2"]),
        ("counter-add", vec!["--participants", "3"]),
    ] {
        let mut args = vec!["bench", "--workload", w, "--duration-s", "0.5", "--json"];
        args.extend(extra);
        let o = rzk(&cs, &args);
        assert!(o.status.success(), "{w}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.starts_with(&format!("{{\"workload\":\"{w}\",")), "{out}");
        assert!(out.contains("\"errors\":0}"), "{w}: {out}");
        assert!(out.contains("\"p999_us\":"), "{w}: {out}");
        assert!(!out.contains("\"rounds\":0,"), "{w} did nothing: {out}");
    }
}

#[test]
fn bench_race_notifies_every_follower_of_every_handoff() {
    // The herd the race election is measured for: each delete reaches all the others.
    let s = server();
    let args = ["bench", "--workload", "handoff-event", "--strategy", "race", "--participants"];
    let o =
        rzk(&s.connect_string(), &[&args[..], &["5", "--duration-s", "0.5", "--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("\"strategy\":\"race\""), "{out}");
    assert!(out.contains("\"notifications_per_change\":4.00,"), "{out}");
}

#[test]
fn bench_refuses_a_strategy_the_workload_does_not_run() {
    for (w, strategy) in [("handoff-event", "herd"), ("handoff-read", "race"), ("handoff", "race")]
    {
        let args = ["bench", "--workload", w, "--strategy", strategy, "--participants", "3"];
        let o = rzk("127.0.0.1:1", &args);
        assert_eq!(o.status.code(), Some(2), "{w}: {}", stderr(&o));
        assert!(stderr(&o).contains("does not run --strategy"), "{w}: {}", stderr(&o));
    }
}

#[test]
fn bench_names_a_refused_connection() {
    let s = TestServer::builder()
        .tick_ms(100)
        .config(|c| c.max_client_connections_per_ip = 3)
        .start()
        .unwrap();
    let cs = s.connect_string();
    let args = ["bench", "--workload", "fanout", "--watchers", "5", "--duration-s", "0.3"];
    let o = rzk(&cs, &args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("closed the connection before answering"), "{err}");
    assert!(err.contains("--max-client-cnxns 0"), "{err}");
}

#[test]
fn bench_refuses_a_fanout_without_watchers() {
    // Nothing to wait for: every round would time out instead of measuring anything.
    let o = rzk("127.0.0.1:1", &["bench", "--workload", "fanout", "--watchers", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--watchers"), "{}", stderr(&o));
}

#[test]
fn bench_handoff_participants_outlive_their_session_timeout_in_the_queue() {
    // Ticks of 100 ms cap the session timeout at 2 s; each follower waits two gaps of 1.5 s for
    // its turn, so only its pings keep its session (and its place in the queue) alive: time
    // bounds, so a heavy slot.
    let _slot = support::serial();
    let s = server();
    let args = [
        "bench",
        "--workload",
        "handoff-event",
        "--participants",
        "3",
        "--gap-ms",
        "1500",
        "--duration-s",
        "5",
        "--json",
    ];
    let o = rzk(&s.connect_string(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"errors\":0"), "{}", stdout(&o));
}

#[test]
fn bench_handoff_read_counts_no_handoff_whose_successor_is_not_first() {
    // A node that sorts before every participant's: the successor's list shows it is not
    // first, and a recipe that checks before it claims would not lead. The run must stop
    // instead of timing that handoff.
    let s = server();
    let cs = s.connect_string();
    let args = ["--connect", &cs, "bench", "--workload", "handoff-read"];
    let child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(args)
        .args(["--participants", "3", "--gap-ms", "5", "--duration-s", "30", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rzk bench");
    let foreign = format!("/bench/handoff-{}/a-0", child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !rzk(&cs, &["create", &foreign]).status.success() {
        assert!(Instant::now() < deadline, "the election's parent never appeared");
        thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().expect("wait for rzk bench");
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(stderr(&o).contains("is not first after its predecessor's deletion"), "{}", stderr(&o));
}

#[test]
fn bench_refuses_a_handoff_without_a_successor() {
    for w in ["handoff-event", "handoff-read"] {
        let o = rzk("127.0.0.1:1", &["bench", "--workload", w, "--participants", "1"]);
        assert_eq!(o.status.code(), Some(2), "{w}: {}", stderr(&o));
        assert!(stderr(&o).contains("--participants 2 or more"), "{w}: {}", stderr(&o));
    }
}

#[test]
fn bench_config_propagation_times_every_cache_of_every_write() {
    let s = server();
    let args = ["bench", "--workload", "config-propagation", "--watchers", "20"];
    let more = ["--participant-sessions", "5", "--gap-ms", "5", "--duration-s", "0.5", "--json"];
    let o = rzk(&s.connect_string(), &[&args[..], &more[..]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("{\"workload\":\"config-propagation\",\"caches\":20,"), "{out}");
    assert!(out.contains("\"sessions\":5,"), "{out}");
    let field = |key: &str| -> u64 {
        let rest = out.split(&format!("\"{key}\":")).nth(1).unwrap_or_else(|| panic!("{out}"));
        rest.split([',', '}']).next().unwrap().parse().unwrap()
    };
    assert!(field("writes") > 0, "no write measured: {out}");
    assert_eq!(field("updates"), field("writes") * 20, "one update per cache and write: {out}");
    assert!(field("last_p50_us") >= field("p50_us"), "{out}");
}

/// Credentials and a SASL login are refused with a usage error, not ignored.
#[test]
fn bench_refuses_credentials_it_would_not_send() {
    let s = server();
    let jaas = rzk_testkit::tempdir::TempDir::new("rzk-bench-jaas");
    let file = jaas.path().join("jaas.conf");
    let login = "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
                 username=\"bob\" password=\"secret\";\n};\n";
    std::fs::write(&file, login).unwrap();
    let file = file.to_str().unwrap().to_owned();
    let bench = ["bench", "--workload", "get", "--duration-s", "0.2"];
    for extra in [&["--auth", "digest:bob:secret"][..], &["--jaas", &file][..]] {
        let o = rzk(&s.connect_string(), &[&bench[..], extra].concat());
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("no credentials"), "{}", stderr(&o));
    }
}
