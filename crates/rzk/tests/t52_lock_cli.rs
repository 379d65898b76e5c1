//! `rzk lock PATH -- CMD` against the in-process server: mutual exclusion with increasing
//! fencing tokens, `--timeout-ms`, the command's exit status, a SIGKILLed holder's command
//! stopped by its watchdog, `--semaphore`, and `--status --json`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rzk_server::TestServer;

/// How long a lock may take to be taken or handed over on a loaded machine.
const HOLD_LIMIT: Duration = Duration::from_secs(10);
/// How soon the command's group must be gone once `rzk lock` is killed.
const STOP_LIMIT: Duration = Duration::from_secs(1);
/// The status `rzk lock` exits with when `--timeout-ms` passed (documented in `--help`).
const TIMED_OUT: i32 = 3;

/// Appends "start <token> <ns>" and "end <token> <ns>" around a sleep of `$NAP` seconds.
const LOGGED: &str = r#"echo "start $RZK_FENCING_TOKEN $(date +%s%N)" >> "$LOG"; sleep "$NAP"; echo "end $RZK_FENCING_TOKEN $(date +%s%N)" >> "$LOG""#;

/// Writes its pid and token to `$PIDS`, then waits for ever in its own group.
const HOLD: &str = r#"echo "$$ $RZK_FENCING_TOKEN $RZK_LOCK_PATH" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; exec sleep 1000"#;

fn server() -> TestServer {
    TestServer::builder().tick_ms(100).start().unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rzk-t52-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// A running `rzk lock`, killed with its command's group when dropped.
struct Lock {
    child: Child,
    pids: PathBuf,
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some((pid, _)) = holder(&self.pids) {
            let group = ["-KILL", "--", &format!("-{pid}")];
            let _ = Command::new("kill").args(group).stderr(Stdio::null()).status();
        }
    }
}

fn rzk(cs: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rzk"));
    c.args(["--connect", cs, "lock"]).args(args).stdin(Stdio::null()).stderr(Stdio::null());
    c
}

/// Starts `rzk lock FLAGS -- sh -c COMMAND` with `$LOG`, `$NAP` (0.3 s) and `$PIDS` set.
fn lock(cs: &str, flags: &[&str], command: &str, log: &Path, name: &str) -> Lock {
    lock_napping(cs, flags, command, log, name, "0.3")
}

fn lock_napping(
    cs: &str,
    flags: &[&str],
    command: &str,
    log: &Path,
    name: &str,
    nap: &str,
) -> Lock {
    let pids = tmp(&format!("pids-{name}"));
    let child = rzk(cs, flags)
        .args(["--session-timeout-ms", "2000", "--grace-ms", "100", "--", "sh", "-c", command])
        .env("LOG", log)
        .env("NAP", nap)
        .env("PIDS", &pids)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    Lock { child, pids }
}

/// The pid and fencing token the [`HOLD`] command wrote, once it runs.
fn holder(pids: &Path) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(pids).ok()?;
    let mut it = text.split_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "{what} not within {limit:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// (start ns, end ns, token) of each run in the log, in the order the runs started.
fn runs(log: &Path) -> Vec<(u128, u128, u64)> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut starts = std::collections::HashMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (token, ns): (u64, u128) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        if f[0] == "start" {
            starts.insert(token, ns);
        } else {
            out.push((starts[&token], ns, token));
        }
    }
    out.sort();
    out
}

/// The most runs that were in progress at one time.
fn most_at_once(runs: &[(u128, u128, u64)]) -> usize {
    let mut edges: Vec<(u128, i32)> = runs.iter().flat_map(|r| [(r.0, 1), (r.1, -1)]).collect();
    // An end before a start at the same instant: touching runs do not overlap.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// The fencing tokens in a `--status --json` view: the leader's first, then each participant's.
fn tokens(json: &str) -> Vec<u64> {
    json.split("\"token\":")
        .skip(1)
        .map(|t| t.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap())
        .collect()
}

fn status_json(cs: &str, path: &str) -> String {
    let o = rzk(cs, &["--status", "--json", path]).output().unwrap();
    assert!(o.status.success(), "rzk lock --status failed: {o:?}");
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn two_locks_on_one_path_never_run_at_once_and_tokens_increase() {
    let s = server();
    let cs = s.connect_string();
    let log = tmp("mutex-log");
    let mut all: Vec<Lock> =
        (0..3).map(|i| lock(&cs, &["/l/mutex"], LOGGED, &log, &format!("m{i}"))).collect();
    for l in &mut all {
        assert_eq!(l.child.wait().unwrap().code(), Some(0));
    }
    let runs = runs(&log);
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(most_at_once(&runs), 1, "two commands ran at once: {runs:?}");
    for w in runs.windows(2) {
        assert!(w[0].2 < w[1].2, "tokens did not increase: {runs:?}");
    }
}

#[test]
fn a_timed_out_lock_exits_3_and_leaves_no_node_and_status_is_the_commands() {
    let s = server();
    let cs = s.connect_string();
    let log = tmp("timeout-log");
    let held = lock(&cs, &["/l/timeout"], HOLD, &log, "t-holder");
    let (_, token) = wait_for("the holder", HOLD_LIMIT, || holder(&held.pids));
    let o = rzk(&cs, &["--timeout-ms", "300", "/l/timeout", "--", "true"]).status().unwrap();
    assert_eq!(o.code(), Some(TIMED_OUT));
    assert_eq!(tokens(&status_json(&cs, "/l/timeout")), vec![token, token], "a node was left");
    drop(held);
    let o = rzk(&cs, &["/l/timeout", "--", "sh", "-c", "exit 7"]).status().unwrap();
    assert_eq!(o.code(), Some(7), "not the command's status");
}

#[test]
fn a_sigkilled_holder_has_its_command_stopped_and_the_next_takes_over() {
    let s = server();
    let cs = s.connect_string();
    let log = tmp("kill-log");
    let mut first = lock(&cs, &["/l/kill"], HOLD, &log, "k1");
    let (pid, token) = wait_for("the first holder", HOLD_LIMIT, || holder(&first.pids));
    let second = lock(&cs, &["/l/kill"], HOLD, &log, "k2");
    thread::sleep(Duration::from_millis(300));
    assert!(holder(&second.pids).is_none(), "the second ran while the first held");
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    wait_for("the killed holder's command to stop", STOP_LIMIT, || (!alive(pid)).then_some(()));
    let (_, next) = wait_for("the second holder", HOLD_LIMIT, || holder(&second.pids));
    assert!(next > token, "token {next} after {token}");
}

#[test]
fn a_semaphore_of_two_runs_two_at_once_but_not_three() {
    let s = server();
    let cs = s.connect_string();
    let log = tmp("semaphore-log");
    let flags = ["--semaphore", "2", "/l/semaphore"];
    // Long runs, so the first two overlap however the starts are spread.
    let mut all: Vec<Lock> =
        (0..3).map(|i| lock_napping(&cs, &flags, LOGGED, &log, &format!("s{i}"), "2")).collect();
    for l in &mut all {
        assert_eq!(l.child.wait().unwrap().code(), Some(0));
    }
    let runs = runs(&log);
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(most_at_once(&runs), 2, "{runs:?}");
}

#[test]
fn status_json_lists_the_holder_then_the_waiters() {
    let s = server();
    let cs = s.connect_string();
    let log = tmp("status-log");
    let held = lock(&cs, &["/l/status"], HOLD, &log, "st1");
    let (_, token) = wait_for("the holder", HOLD_LIMIT, || holder(&held.pids));
    let _waiter = lock(&cs, &["/l/status"], HOLD, &log, "st2");
    let view = wait_for("the waiter to queue", HOLD_LIMIT, || {
        let json = status_json(&cs, "/l/status");
        (tokens(&json).len() == 3).then_some(json)
    });
    let t = tokens(&view);
    assert_eq!((t[0], t[1]), (token, token), "the holder is not first: {view}");
    assert!(t[2] > token, "the waiter is not after the holder: {view}");
}
