//! `rzk lock PATH -- CMD` against the in-process server and Apache ZooKeeper: mutual
//! exclusion with increasing fencing tokens, `--timeout-ms`, the command's exit status, a
//! SIGKILLed holder's command stopped by its watchdog, a partitioned holder's command stopped
//! before its session expires, `--semaphore`, `--status` of each layout, and a release that
//! fails after the command (reported, status 5, the node gone with the session).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rzk_testkit::proxy::Proxy;
use support::{alive, Kind, Server};

/// How long a lock may take to be taken or handed over on a loaded machine.
const HOLD_LIMIT: Duration = Duration::from_secs(10);
/// How soon the command's group must be gone once `rzk lock` is killed.
const STOP_LIMIT: Duration = Duration::from_secs(1);
/// The status `rzk lock` exits with when `--timeout-ms` passed (documented in `--help`).
const TIMED_OUT: i32 = 3;
/// The status `rzk lock` exits with when the lock was lost and the command stopped.
const LOST: i32 = 4;
/// The status `rzk lock` exits with when the command exited 0 but the release failed.
const RELEASE_FAILED: i32 = 5;

/// Appends "start <token> <ns>" and "end <token> <ns>" around a sleep of `$NAP` seconds.
const LOGGED: &str = r#"echo "start $RZK_FENCING_TOKEN $(date +%s%N)" >> "$LOG"; sleep "$NAP"; echo "end $RZK_FENCING_TOKEN $(date +%s%N)" >> "$LOG""#;

/// Writes its pid and token to `$PIDS`, then waits for ever in its own group.
const HOLD: &str = r#"echo "$$ $RZK_FENCING_TOKEN $RZK_LOCK_PATH" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; exec sleep 1000"#;

both_servers! {
    mutual_exclusion => two_locks_on_one_path_never_run_at_once_and_tokens_increase;
    timeout_and_status => a_timed_out_lock_exits_3_and_leaves_no_node_and_status_is_the_commands;
    sigkilled_holder => a_sigkilled_holder_has_its_command_stopped_and_the_next_takes_over;
    partitioned_holder => a_partitioned_holder_stops_its_command_before_the_next_holds;
    semaphore => a_semaphore_of_two_runs_two_at_once_but_not_three;
    mutex_status => status_json_lists_the_holder_then_the_waiters;
    semaphore_status => status_of_a_semaphore_lists_the_lease_holders_then_the_queue;
    read_write_status => status_of_a_read_write_lock_lists_readers_and_writers;
    release_failed => a_release_that_fails_after_the_command_exits_5;
    creator_only_acl => a_creator_only_lock_keeps_another_identity_out;
}

/// A file name of its own under the temporary directory, for this process and call.
fn tmp(name: &str) -> PathBuf {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("rzk-t52-{name}-{}-{n}", std::process::id()));
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

/// (kind, token) of each holder or waiter, in order.
type Entries = Vec<(String, u64)>;

/// The entries of one list (`"holders"` or `"waiters"`) of a `--status --json` view, as
/// (kind, token) pairs in order. Entries hold no arrays, so the list ends at the first `]`.
fn entries(json: &str, list: &str) -> Entries {
    let key = format!("\"{list}\":[");
    let at = json.find(&key).unwrap_or_else(|| panic!("no {list} in {json}")) + key.len();
    let body = &json[at..at + json[at..].find(']').unwrap()];
    let field = |entry: &str, name: &str| -> String {
        let rest = &entry[entry.find(&format!("\"{name}\":")).unwrap() + name.len() + 3..];
        rest.trim_start_matches('"').split(['"', ',', '}']).next().unwrap().to_string()
    };
    body.split("},")
        .filter(|e| !e.is_empty())
        .map(|e| (field(e, "kind"), field(e, "token").parse().unwrap()))
        .collect()
}

fn status(cs: &str, flags: &[&str]) -> String {
    let o = rzk(cs, &[&["--status"], flags].concat()).output().unwrap();
    assert!(o.status.success(), "rzk lock --status {flags:?} failed: {o:?}");
    String::from_utf8(o.stdout).unwrap()
}

/// The (holders, waiters) tokens of `--status --json` with `flags`.
fn holders_and_waiters(cs: &str, flags: &[&str]) -> (Entries, Entries) {
    let json = status(cs, &[&["--json"], flags].concat());
    (entries(&json, "holders"), entries(&json, "waiters"))
}

fn kinds(list: &[(String, u64)]) -> Vec<&str> {
    list.iter().map(|(k, _)| k.as_str()).collect()
}

fn two_locks_on_one_path_never_run_at_once_and_tokens_increase(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
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

fn a_timed_out_lock_exits_3_and_leaves_no_node_and_status_is_the_commands(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
    let log = tmp("timeout-log");
    let held = lock(&cs, &["/l/timeout"], HOLD, &log, "t-holder");
    let (_, token) = wait_for("the holder", HOLD_LIMIT, || holder(&held.pids));
    let o = rzk(&cs, &["--timeout-ms", "300", "/l/timeout", "--", "true"]).status().unwrap();
    assert_eq!(o.code(), Some(TIMED_OUT));
    let (holders, waiters) = holders_and_waiters(&cs, &["/l/timeout"]);
    assert_eq!(holders, [("exclusive".to_string(), token)]);
    assert!(waiters.is_empty(), "a node was left: {waiters:?}");
    drop(held);
    let o = rzk(&cs, &["/l/timeout", "--", "sh", "-c", "exit 7"]).status().unwrap();
    assert_eq!(o.code(), Some(7), "not the command's status");
}

fn a_sigkilled_holder_has_its_command_stopped_and_the_next_takes_over(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
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

/// The holder's network is cut (its packets dropped, its sockets open): `rzk lock` cannot
/// know its session's fate, so it must stop the command before the server could expire the
/// session and let the next holder in. The next holder's command checks, as it starts, that
/// the first command is gone: an order, not a timing.
fn a_partitioned_holder_stops_its_command_before_the_next_holds(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
    let proxy = Proxy::start(&cs);
    let log = tmp("cut-log");
    let mut first = lock(&proxy.hosts(), &["/l/cut"], HOLD, &log, "c1");
    let (pid, token) = wait_for("the first holder", HOLD_LIMIT, || holder(&first.pids));
    let check = format!(r#"kill -0 {pid} 2>/dev/null && echo "overlap" >> "$LOG"; {HOLD}"#);
    let second = lock(&cs, &["/l/cut"], &check, &log, "c2");
    thread::sleep(Duration::from_millis(300));
    assert!(holder(&second.pids).is_none(), "the second ran while the first held");
    proxy.blackhole();
    let (_, next) = wait_for("the second holder", HOLD_LIMIT, || holder(&second.pids));
    assert!(next > token, "token {next} after {token}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.contains("overlap"), "the partitioned holder's command outlived its session");
    assert!(!alive(pid), "the partitioned holder's command still runs");
    let code = wait_for("the partitioned rzk lock to exit", HOLD_LIMIT, || {
        first.child.try_wait().unwrap().map(|st| st.code())
    });
    assert_eq!(code, Some(LOST));
}

fn a_semaphore_of_two_runs_two_at_once_but_not_three(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
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

fn status_json_lists_the_holder_then_the_waiters(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
    let log = tmp("status-log");
    let held = lock(&cs, &["/l/status"], HOLD, &log, "st1");
    let (_, token) = wait_for("the holder", HOLD_LIMIT, || holder(&held.pids));
    let _waiter = lock(&cs, &["/l/status"], HOLD, &log, "st2");
    let (holders, waiters) = wait_for("the waiter to queue", HOLD_LIMIT, || {
        let (h, w) = holders_and_waiters(&cs, &["/l/status"]);
        (w.len() == 1).then_some((h, w))
    });
    assert_eq!(holders, [("exclusive".to_string(), token)]);
    assert!(waiters[0].1 > token, "the waiter is not after the holder: {waiters:?}");
    let text = status(&cs, &["/l/status"]);
    assert!(text.starts_with("/l/status (mutex): 1 holding, 1 waiting\n"), "{text}");
}

fn status_of_a_semaphore_lists_the_lease_holders_then_the_queue(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
    let log = tmp("semstat-log");
    let flags = ["--semaphore", "2", "/l/semstat"];
    let first = lock(&cs, &flags, HOLD, &log, "ss1");
    let second = lock(&cs, &flags, HOLD, &log, "ss2");
    let mut tokens: Vec<u64> = [&first, &second]
        .iter()
        .map(|l| wait_for("a lease holder", HOLD_LIMIT, || holder(&l.pids)).1)
        .collect();
    tokens.sort();
    let third = lock(&cs, &flags, HOLD, &log, "ss3");
    // Read with the number of leases, and with the layout and holders found from the nodes.
    for status_flags in [&["--semaphore", "2", "/l/semstat"][..], &["/l/semstat"]] {
        let (holders, waiters) = wait_for("the third to wait", HOLD_LIMIT, || {
            let (h, w) = holders_and_waiters(&cs, status_flags);
            (w.len() == 1 && h.len() == 2).then_some((h, w))
        });
        assert_eq!(kinds(&holders), ["lease", "lease"]);
        assert_eq!(holders.iter().map(|h| h.1).collect::<Vec<_>>(), tokens, "{status_flags:?}");
        assert_eq!(kinds(&waiters), ["lease"]);
    }
    assert!(holder(&third.pids).is_none(), "a third lease of two was granted");
    let text = status(&cs, &["--semaphore", "2", "/l/semstat"]);
    let head = "/l/semstat (semaphore of 2 leases): 2 holding, 1 waiting\n";
    assert!(text.starts_with(head), "{text}");
}

fn status_of_a_read_write_lock_lists_readers_and_writers(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
    let log = tmp("rwstat-log");
    let path = "/l/rwstat";
    let readers: Vec<Lock> =
        (0..2).map(|i| lock(&cs, &["--read", path], HOLD, &log, &format!("r{i}"))).collect();
    let mut tokens: Vec<u64> =
        readers.iter().map(|l| wait_for("a reader", HOLD_LIMIT, || holder(&l.pids)).1).collect();
    tokens.sort();
    let writer = lock(&cs, &["--write", path], HOLD, &log, "w");
    let queued = |n: usize| {
        wait_for("the queue", HOLD_LIMIT, || {
            let (h, w) = holders_and_waiters(&cs, &[path]);
            (w.len() == n).then_some((h, w))
        })
    };
    queued(1);
    // A reader after a queued writer waits: first come, first served across kinds.
    let late = lock(&cs, &["--read", path], HOLD, &log, "r-late");
    let (holders, waiters) = queued(2);
    assert_eq!(kinds(&holders), ["read", "read"]);
    assert_eq!(holders.iter().map(|h| h.1).collect::<Vec<_>>(), tokens);
    assert_eq!(kinds(&waiters), ["write", "read"]);
    assert!(holder(&writer.pids).is_none() && holder(&late.pids).is_none());
    let text = status(&cs, &["--read", path]);
    assert!(text.starts_with("/l/rwstat (read-write lock): 2 holding, 2 waiting\n"), "{text}");
}

/// Writes its pid and token to `$PIDS`, then exits 0 once `$GO` exists.
const UNTIL_GO: &str = r#"echo "$$ $RZK_FENCING_TOKEN" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; while [ ! -e "$GO" ]; do sleep 0.05; done"#;

fn a_release_that_fails_after_the_command_exits_5(kind: Kind) {
    use rzk_client::{Acl, AuthId, Permission};
    let s = Server::start(kind);
    let cs = s.hosts();
    let (pids, go) = (tmp("release-pids"), tmp("release-go"));
    let mut child = rzk(&cs, &["--session-timeout-ms", "2000", "/l/release", "--"])
        .args(["sh", "-c", UNTIL_GO])
        .env("PIDS", &pids)
        .env("GO", &go)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the holder", HOLD_LIMIT, || holder(&pids));
    // While the command runs, the lock path stops allowing deletes of its children.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let raw = rt.block_on(rzk_client::Client::connect(&cs)).unwrap();
    let no_delete = Permission::READ | Permission::WRITE | Permission::CREATE | Permission::ADMIN;
    let acl = [Acl::new(no_delete, AuthId::anyone())];
    rt.block_on(raw.set_acl("/l/release", &acl, None)).unwrap();
    std::fs::write(&go, b"").unwrap();
    let status = wait_for("rzk lock's exit", HOLD_LIMIT, || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(RELEASE_FAILED), "the failed release is not reported");
    // The node goes with rzk lock's session (closed, or expired after its timeout).
    wait_for("the lock node's removal", HOLD_LIMIT, || {
        rt.block_on(raw.list_children("/l/release")).unwrap().is_empty().then_some(())
    });
    let _ = std::fs::remove_file(&go);
}

fn a_creator_only_lock_keeps_another_identity_out(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
    let log = tmp("acl-log");
    let alice = ["--auth", "digest:alice:pw", "--acl", "auth::cdrwa", "/acl/lock"];
    let held = lock(&cs, &alice, HOLD, &log, "acl-holder");
    let (_, token) = wait_for("the holder", HOLD_LIMIT, || holder(&held.pids));
    let bob = ["--auth", "digest:bob:pw", "--timeout-ms", "300", "/acl/lock", "--", "true"];
    let o = rzk(&cs, &bob).stderr(Stdio::piped()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "bob, another identity: {err}");
    assert!(err.contains("not authorized"), "{err}");
    drop(held);
    let again = [&alice[..], &["--", "sh", "-c", "echo $RZK_FENCING_TOKEN"]].concat();
    let o = rzk(&cs, &again).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "alice again");
    let next: u64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    assert!(next > token, "{next} after {token}");
}
