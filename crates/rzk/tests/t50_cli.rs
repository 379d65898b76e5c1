//! End-to-end tests of the `rzk` binary's client commands against an in-process server.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rzk_testkit::ports::free_port;
use rzk_testkit::proxy::Proxy;
use rzk_testkit::tempdir::TempDir;
use support::{alive, in_process as server, rzk, stderr, stdout, stdout_ok};

#[test]
fn node_commands_and_their_errors() {
    let s = server();
    let cs = s.connect_string();
    let ok = |args: &[&str]| stdout_ok(&cs, args);
    assert_eq!(ok(&["create", "/app", "v1"]), "Created /app\n");
    assert_eq!(ok(&["create", "-s", "/app/job-", "x"]), "Created /app/job-0000000000\n");
    ok(&["create", "/app/cfg", "a=1"]);
    ok(&["create", "-c", "/box"]);
    ok(&["create", "-t", "60000", "/ttl"]);
    assert_eq!(ok(&["get", "/app/cfg"]), "a=1\n");
    ok(&["set", "/app/cfg", "a=2"]);
    assert!(ok(&["get", "-s", "/app/cfg"]).contains("dataVersion = 1"));
    assert_eq!(ok(&["ls", "/app"]), "[cfg, job-0000000000]\n");
    assert!(ok(&["stat", "/app"]).contains("numChildren = 2"));
    assert_eq!(ok(&["tree", "/app"]), "/app\n  cfg\n  job-0000000000\n");

    // Errors are clear and exit with status 2.
    let o = rzk(&cs, &["get", "/nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("node /nope does not exist"), "{}", stderr(&o));
    let o = rzk(&cs, &["delete", "/app"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("has children"), "{}", stderr(&o));
    let o = rzk(&cs, &["create", "bad-path"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad path"), "{}", stderr(&o));
    let o = rzk(&cs, &["set", "/app/cfg", "x", "-v", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = rzk(&cs, &["ls", "/", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--no-such-flag"), "{}", stderr(&o));

    ok(&["delete", "-r", "/app"]);
    assert_eq!(rzk(&cs, &["get", "/app"]).status.code(), Some(2));
}

#[test]
fn an_unreachable_server_is_reported_after_a_bounded_timeout() {
    let port = free_port();
    let started = Instant::now();
    let o = rzk(&format!("127.0.0.1:{port}"), &["--connect-timeout-ms", "500", "ls", "/"]);
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot connect"), "{}", stderr(&o));
    // The environment variable works as well as the flag.
    let o = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .env("RZK_CONNECT", format!("127.0.0.1:{port}"))
        .args(["--connect-timeout-ms", "300", "ls", "/"])
        .output()
        .unwrap();
    assert!(stderr(&o).contains(&format!("127.0.0.1:{port}")), "{}", stderr(&o));
}

#[test]
fn a_refused_connection_fails_at_once() {
    // Nothing listens on the port: every client command fails at once, as zkCli does, rather
    // than after the 5 s connect timeout.
    let port = free_port();
    let cs = format!("127.0.0.1:{port},127.0.0.1:{port}/chroot");
    for args in [&["ls", "/"][..], &["leader", "/jobs/x"], &["elect", "/jobs/x", "--", "true"]] {
        let started = Instant::now();
        let o = rzk(&cs, args);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{args:?} took {:?}",
            started.elapsed()
        );
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("connection refused"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_black_holed_host_costs_a_node_command_only_its_share_of_the_budget() {
    // The hole accepts TCP and answers nothing. Each attempt gets the 5 s budget divided by
    // the hosts, so a command that starts on the hole still reaches the server in time.
    let s = server();
    let hole = Proxy::start(s.connect_string());
    hole.blackhole();
    let cs = format!("{},{}", hole.hosts(), s.connect_string());
    for _ in 0..8 {
        let started = Instant::now();
        let o = rzk(&cs, &["ls", "/"]);
        assert!(o.status.success(), "after {:?}: {}", started.elapsed(), stderr(&o));
        assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    }
}

#[test]
fn credentials_from_the_flag_the_environment_and_a_file_reach_an_enforcing_server() {
    let s = rzk_server::TestServer::builder()
        .config(|c| c.core.enforced_auth_schemes = vec!["digest".into()])
        .start()
        .expect("start rzk");
    let cs = s.connect_string();
    let o = rzk(&cs, &["ls", "/"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("requires credentials"), "{}", stderr(&o));
    let o = rzk(&cs, &["--auth", "digest:app:secret", "ls", "/"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .env("RZK_AUTH", "digest:app:secret")
        .args(["--connect", &cs, "ls", "/"])
        .output()
        .unwrap();
    assert!(o.status.success(), "RZK_AUTH: {}", stderr(&o));
    let dir = TempDir::new("rzk-cli-auth");
    let file = dir.join("auth");
    std::fs::write(&file, "# the app's credential\n\ndigest:app:secret\n").unwrap();
    let o = rzk(&cs, &["--auth-file", file.to_str().unwrap(), "ls", "/"]);
    assert!(o.status.success(), "--auth-file: {}", stderr(&o));

    // Bad input is refused before connecting, naming the format or the line.
    let o = rzk(&cs, &["--auth", "no-scheme", "ls", "/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("scheme:credentials"), "{}", stderr(&o));
    std::fs::write(&file, "digest:app:secret\nnonsense\n").unwrap();
    let o = rzk(&cs, &["--auth-file", file.to_str().unwrap(), "ls", "/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
}

#[test]
fn acls_are_read_set_and_given_at_create_in_zkcli_syntax() {
    let s = server();
    let cs = s.connect_string();
    let ok = |args: &[&str]| stdout_ok(&cs, args);
    // Read and admin: not writable, but its ACL may be changed.
    ok(&["create", "--acl", "world:anyone:ra", "/ro", "x"]);
    assert_eq!(ok(&["acl", "get", "/ro"]), "world:anyone:ra\naclVersion = 0\n");
    let o = rzk(&cs, &["set", "/ro", "y"]);
    assert!(stderr(&o).contains("not authorized"), "{}", stderr(&o));
    ok(&["acl", "set", "/ro", "world:anyone:cdrwa", "-v", "0"]);
    ok(&["set", "/ro", "y"]);
    assert_eq!(ok(&["acl", "get", "/ro"]), "world:anyone:cdrwa\naclVersion = 1\n");

    // Creator-only: the identity that created it reads it, nobody else does.
    let me = ["--auth", "digest:app:secret"];
    let o = rzk(&cs, &[&me[..], &["create", "--acl", "auth::cdrwa", "/mine", "m"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let o = rzk(&cs, &[&me[..], &["get", "/mine"]].concat());
    assert_eq!(stdout(&o), "m\n", "{}", stderr(&o));
    let o = rzk(&cs, &["get", "/mine"]);
    assert!(stderr(&o).contains("not authorized"), "{}", stderr(&o));
    let acl = stdout(&rzk(&cs, &[&me[..], &["acl", "get", "/mine"]].concat()));
    assert!(acl.starts_with("digest:app:"), "the creator's digest id: {acl}");

    for bad in ["world:anyone", "world:anyone:x", "nope"] {
        let o = rzk(&cs, &["acl", "set", "/ro", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains("scheme:id:perms") || stderr(&o).contains("permission"));
    }
}

/// A `rzk elect` process whose command appends "start <id> <token>" to a shared log and,
/// when terminated, "stop <id>".
struct Elect {
    child: Child,
}

impl Drop for Elect {
    /// SIGTERM first: `rzk elect` then stops its command and resigns. SIGKILL if it hangs.
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Kills a command's whole process group, in case a killed `rzk elect`'s watchdog has not yet.
fn kill_group(pid: &str) {
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).status();
}

fn elect(server: &str, path: &str, id: &str, log: &Path, script: &str) -> Elect {
    elect_with(server, path, id, log, script, &[])
}

/// `elect` with `flags` (such as `--recipe race`) before the command.
fn elect_with(
    server: &str,
    path: &str,
    id: &str,
    log: &Path,
    script: &str,
    flags: &[&str],
) -> Elect {
    let child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", server, "elect", path, "--id", id])
        .args(["--session-timeout-ms", "1000", "--grace-ms", "100"])
        .args(flags)
        .arg("--")
        .args(["sh", "-c", script])
        .env("LOG", log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Elect { child }
}

const WORKER: &str = r#"trap 'echo "stop $RZK_PARTICIPANT_ID" >> "$LOG"; exit 0' TERM; echo "start $RZK_PARTICIPANT_ID $RZK_FENCING_TOKEN $$" >> "$LOG"; while true; do sleep 0.05; done"#;

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log).unwrap_or_default().lines().map(str::to_string).collect()
}

fn wait_for(log: &Path, what: &str, n: usize, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let lines = log_lines(log);
        if lines.iter().filter(|l| l.starts_with(what)).count() >= n {
            return lines;
        }
        assert!(Instant::now() < deadline, "waited {within:?} for {n} x {what:?}; log: {lines:?}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `rzk leader --json` lists `n` participants under `path`.
fn wait_queued(cs: &str, path: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let json = stdout(&rzk(cs, &["leader", path, "--json"]));
        // The leader appears twice: as the leader and first in the queue.
        if json.matches("\"id\":").count() == n + 1 {
            return;
        }
        assert!(Instant::now() < deadline, "waited for {n} participants: {json}");
        thread::sleep(Duration::from_millis(20));
    }
}

fn tokens(lines: &[String]) -> Vec<i64> {
    lines
        .iter()
        .filter(|l| l.starts_with("start"))
        .map(|l| l.split(' ').nth(2).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn a_killed_leader_is_replaced_within_the_session_timeout() {
    let s = server();
    let cs = s.connect_string();
    let dir = TempDir::new("rzk-t50-kill");
    let log = dir.join("log");
    let mut procs: Vec<Elect> = Vec::new();
    // One at a time, each queued before the next starts: a process's start-up time on a
    // loaded machine must not reorder the queue.
    for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
        procs.push(elect(&cs, "/e/kill", id, &log, WORKER));
        wait_queued(&cs, "/e/kill", i + 1);
    }
    wait_for(&log, "start a", 1, Duration::from_secs(10));
    // `rzk leader --json` shows the queue.
    let o = rzk(&cs, &["leader", "/e/kill", "--json"]);
    let json = stdout(&o);
    assert!(json.starts_with("{\"leader\":{\"id\":\"a\""), "{json}");
    assert_eq!(json.matches("\"id\":").count(), 4, "leader + 3 participants: {json}");
    // SIGKILL the leader's rzk: its watchdog stops the command and its session ends, so b takes
    // over (t41_elect_watchdog checks the command's end itself).
    let killed = Instant::now();
    procs[0].child.kill().unwrap();
    procs[0].child.wait().unwrap();
    let lines = wait_for(&log, "start b", 1, Duration::from_millis(1000 + 1000 + 500));
    assert!(killed.elapsed() < Duration::from_millis(2000), "failover took {:?}", killed.elapsed());
    let t = tokens(&lines);
    assert!(t.windows(2).all(|w| w[0] < w[1]), "tokens grow: {t:?}");
    // Belt and braces: the killed rzk's command group must be gone already.
    let a_pid = lines.iter().find(|l| l.starts_with("start a")).unwrap().split(' ').nth(3).unwrap();
    kill_group(a_pid);
}

#[test]
fn when_the_command_exits_the_next_candidate_takes_over() {
    let s = server();
    let cs = s.connect_string();
    let dir = TempDir::new("rzk-t50-exit");
    let log = dir.join("log");
    let once =
        r#"echo "start $RZK_PARTICIPANT_ID $RZK_FENCING_TOKEN" >> "$LOG"; sleep 0.2; exit 7"#;
    let mut a = elect(&cs, "/e/exit", "a", &log, once);
    wait_for(&log, "start a", 1, Duration::from_secs(10));
    let _b = elect(&cs, "/e/exit", "b", &log, WORKER);
    let lines = wait_for(&log, "start b", 1, Duration::from_secs(10));
    assert!(lines[0].starts_with("start a"), "{lines:?}");
    // rzk elect exits with its command's status.
    let st = a.child.wait().unwrap();
    assert_eq!(st.code(), Some(7));
    let mut err = String::new();
    a.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("resigning"), "{err}");
}

#[test]
fn a_race_shows_its_holder_and_hands_over_with_a_larger_token() {
    let s = server();
    let cs = s.connect_string();
    let dir = TempDir::new("rzk-t50-race");
    let log = dir.join("log");
    let once = r#"echo "start $RZK_PARTICIPANT_ID $RZK_FENCING_TOKEN" >> "$LOG"; sleep 1; exit 0"#;
    let race = ["--recipe", "race"];
    let mut a = elect_with(&cs, "/e/race", "a", &log, once, &race);
    wait_for(&log, "start a", 1, Duration::from_secs(10));
    // The holder is the node's data; nobody queues in a race.
    let json = stdout(&rzk(&cs, &["leader", "/e/race", "--recipe", "race", "--json"]));
    assert!(json.starts_with("{\"leader\":{\"id\":\"a\""), "{json}");
    let _b = elect_with(&cs, "/e/race", "b", &log, WORKER, &race);
    let lines = wait_for(&log, "start b", 1, Duration::from_secs(10));
    let t = tokens(&lines);
    assert!(lines[0].starts_with("start a") && t[0] < t[1], "{lines:?}");
    assert_eq!(a.child.wait().unwrap().code(), Some(0));
    let o = rzk(&cs, &["get", "/e/race"]);
    assert_eq!(stdout(&o), "b\n", "b holds the node");
}

#[test]
fn a_cut_off_leader_kills_its_command_before_the_session_can_expire() {
    let s = server();
    let cs = s.connect_string();
    let dir = TempDir::new("rzk-t50-cut");
    let log = dir.join("log");
    // The proxy stands in for a network partition.
    let proxy = Proxy::start(s.addr());
    let mut a = elect(&proxy.hosts(), "/e/cut", "a", &log, WORKER);
    let started = wait_for(&log, "start a", 1, Duration::from_secs(10));
    let a_pid: u32 = started[0].split(' ').nth(3).and_then(|p| p.parse().ok()).unwrap();
    let _b = elect(&cs, "/e/cut", "b", &log, WORKER);
    thread::sleep(Duration::from_millis(200));
    proxy.cut();
    let lines = wait_for(&log, "start b", 1, Duration::from_secs(5));
    // a's command was gone when b's started: no overlap. (Its "stop" line is not the proof: a
    // shell that cannot run its trap within the grace is killed before it writes one.)
    assert!(!alive(a_pid), "a's command outlived its leadership into b's term: {lines:?}");
    if let Some(stop_a) = lines.iter().position(|l| l == "stop a") {
        let start_b = lines.iter().position(|l| l.starts_with("start b")).unwrap();
        assert!(stop_a < start_b, "a's command stopped after b's started: {lines:?}");
    }
    let _ = a.child.kill();
    let mut err = String::new();
    let _ = a.child.wait();
    a.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("lost leadership"), "{err}");
}

#[test]
fn leader_watch_prints_each_change() {
    let s = server();
    let cs = s.connect_string();
    let dir = TempDir::new("rzk-t50-watch");
    let log = dir.join("log");
    let mut watch = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", &cs, "leader", "/e/watch", "--watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(watch.stdout.take().unwrap()).lines();
    assert_eq!(out.next().unwrap().unwrap(), "{\"leader\":null,\"participants\":[]}");
    let _a = elect(&cs, "/e/watch", "a", &log, WORKER);
    let line = out.next().unwrap().unwrap();
    assert!(line.contains("\"id\":\"a\""), "{line}");
    let _ = watch.kill();
    let _ = watch.wait();
}

#[test]
fn demo_runs_to_completion() {
    let o = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["demo", "--candidates", "4", "--session-timeout-ms", "1000", "--rotations", "4"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("crash failover"), "{text}");
    assert!(text.contains("selector rotation"), "{text}");
    // The seeds' other flows: a lock handed over, a config change, an instance leaving.
    assert!(text.contains("nightly-backup holds after"), "{text}");
    assert!(text.contains("every watcher has version 1"), "{text}");
    assert!(text.contains("every client lists web-1 alone"), "{text}");
}

#[test]
fn demo_ui_serves_the_console_on_its_server_and_stays_up() {
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let mut demo = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["demo", "--ui", "--ui-bind", &bind, "--candidates", "3", "--rotations", "3"])
        .args(["--session-timeout-ms", "1000"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(demo.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("stay up") {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "the demo ended: {seen}");
        seen.push_str(&line);
    }
    let req = format!("GET / HTTP/1.1\r\nHost: {bind}\r\nConnection: close\r\n\r\n");
    let page = rzk_testkit::http_abuse::raw(bind.parse().unwrap(), req.as_bytes());
    for want in ["/demo/jobs/report", "/demo/locks/nightly", "/demo/services"] {
        assert!(page.contains(want), "the console lacks {want}: {page}");
    }
    let _ = demo.kill();
    let _ = demo.wait();
}

/// What `rzk server --in-memory --port 0` with `flags` says on stderr as it refuses them as
/// a usage error (exit 2), before anything is bound or recovered.
fn server_usage_error(flags: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["server", "--in-memory", "--port", "0"])
        .args(flags)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    stderr(&o)
}

#[test]
fn server_refuses_zero_io_threads() {
    // Nothing would ever read a connection.
    let err = server_usage_error(&["--io-threads", "0"]);
    assert!(err.contains("--io-threads"), "{err}");
}

#[test]
fn server_names_the_schedules_it_knows() {
    let err = server_usage_error(&["--schedule", "fastest"]);
    for want in ["--schedule", "fair", "throughput"] {
        assert!(err.contains(want), "no {want}: {err}");
    }
}

#[test]
fn requeue_rejoins_after_the_command_exits() {
    let s = server();
    let cs = s.connect_string();
    let dir = TempDir::new("rzk-t50-requeue");
    let log = dir.join("log");
    let quick = r#"echo "start $RZK_PARTICIPANT_ID $RZK_FENCING_TOKEN $$" >> "$LOG"; sleep 0.1"#;
    let child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args([
            "--connect",
            &cs,
            "elect",
            "/e/requeue",
            "--id",
            "r",
            "--requeue",
            "--session-timeout-ms",
            "1000",
            "--",
        ])
        .args(["sh", "-c", quick])
        .env("LOG", &log)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _guard = Elect { child };
    // Alone in the election, it leads again after each run, each time with a larger token.
    let lines = wait_for(&log, "start r", 3, Duration::from_secs(10));
    let t = tokens(&lines);
    assert!(t.windows(2).all(|w| w[0] < w[1]), "a fresh term each time: {t:?}");
}

#[test]
fn watch_prints_changes_as_they_happen() {
    let s = server();
    let cs = s.connect_string();
    assert!(rzk(&cs, &["create", "/w", "0"]).status.success());
    let mut watch = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", &cs, "watch", "-r", "/w", "--count", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the watch is armed (it says so on stderr).
    let mut err = BufReader::new(watch.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.contains("watching /w"), "{first}");
    assert!(rzk(&cs, &["set", "/w", "1"]).status.success());
    assert!(rzk(&cs, &["create", "/w/kid", ""]).status.success());
    let out = watch.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "NodeDataChanged /w\nNodeCreated /w/kid\n");
}

#[test]
fn ui_refuses_a_bad_login_file_and_a_bound_port() {
    let srv = server();
    let cs = srv.connect_string();
    let dir = TempDir::new("rzk-ui");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let empty = empty.to_str().unwrap();
    let o =
        rzk(&cs, &["ui", "--bind", "127.0.0.1:0", "--ui-user", "ops", "--ui-password-file", empty]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no password on its first line"), "{}", stderr(&o));
    let o = rzk(&cs, &["ui", "--ui-user", "ops"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--ui-password-file"), "{}", stderr(&o));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bind = taken.local_addr().unwrap().to_string();
    let o = rzk(&cs, &["ui", "--bind", &bind]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("cannot listen on {bind}")), "{}", stderr(&o));
}
