//! `rzk elect`'s command stops however `rzk elect` ends: killed, stopped, signalled, or its
//! watchdog killed. Every command here leaves a grandchild in its process group, which must
//! stop with it.

mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rzk_server::TestServer;
use support::alive;

/// How soon the command's whole group must be gone once `rzk elect` cannot stop it.
const STOP_LIMIT: Duration = Duration::from_secs(1);
/// How long a candidate may take to start leading on a loaded machine.
const LEAD_LIMIT: Duration = Duration::from_secs(10);

/// Writes its own pid and its grandchild's to `$PIDS`, logs "stop <id>" on SIGTERM.
const COMMAND: &str = r#"trap 'echo "stop $RZK_PARTICIPANT_ID" >> "$LOG"; exit 0' TERM; sleep 1000 & echo "$$ $!" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; echo "start $RZK_PARTICIPANT_ID" >> "$LOG"; wait"#;

/// Like [`COMMAND`], but the command and its grandchild ignore SIGTERM.
const DEAF: &str =
    r#"trap '' TERM; sleep 1000 & echo "$$ $!" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"; wait"#;

fn server() -> TestServer {
    TestServer::builder().tick_ms(100).start().unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rzk-t41-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// A running `rzk elect`, and the files its command writes.
struct Elect {
    child: Child,
    pids: PathBuf,
    log: PathBuf,
}

impl Drop for Elect {
    fn drop(&mut self) {
        let _ = signal(self.child.id(), "CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Whatever survived (on today's code, everything) must not outlive the test.
        if let Some((cmd, _)) = read_pids(&self.pids) {
            let group = ["-KILL", "--", &format!("-{cmd}")];
            let _ = Command::new("kill").args(group).stderr(Stdio::null()).status();
        }
    }
}

fn elect(cs: &str, path: &str, id: &str, session_timeout_ms: &str, log: &Path) -> Elect {
    elect_with(
        cs,
        path,
        id,
        &["--session-timeout-ms", session_timeout_ms, "--grace-ms", "100"],
        COMMAND,
        log,
    )
}

fn elect_with(cs: &str, path: &str, id: &str, flags: &[&str], command: &str, log: &Path) -> Elect {
    let pids = tmp(&format!("pids{}-{id}", path.replace('/', "-")));
    let child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", cs, "elect", path, "--id", id])
        .args(flags)
        .args(["--", "sh", "-c", command])
        .env("LOG", log)
        .env("PIDS", &pids)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Elect { child, pids, log: log.to_path_buf() }
}

fn signal(pid: u32, sig: &str) -> bool {
    let args = [format!("-{sig}"), pid.to_string()];
    Command::new("kill").args(args).stderr(Stdio::null()).status().unwrap().success()
}

fn read_pids(path: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut it = text.split_whitespace().map(|p| p.parse().ok());
    Some((it.next()??, it.next()??))
}

fn ppid(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(") ").unwrap();
    rest.split(' ').nth(1).unwrap().parse().unwrap()
}

/// Waits until the command leads and has written its pids.
fn leading(e: &Elect) -> (u32, u32) {
    let deadline = Instant::now() + LEAD_LIMIT;
    loop {
        if let Some(pids) = read_pids(&e.pids) {
            assert!(alive(pids.0) && alive(pids.1), "the command and its grandchild run");
            return pids;
        }
        assert!(Instant::now() < deadline, "the command never started: {:?}", log_lines(&e.log));
        thread::sleep(Duration::from_millis(10));
    }
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_string).collect()
}

/// Waits for both processes to be gone, up to `limit`; returns how long that took.
fn gone_within(pids: (u32, u32), limit: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if !alive(pids.0) && !alive(pids.1) {
            return Ok(start.elapsed());
        }
        thread::sleep(Duration::from_millis(5));
    }
    Err(format!("command alive: {}, grandchild alive: {}", alive(pids.0), alive(pids.1)))
}

/// `rzk elect`'s exit status, or a panic if it is still running after [`LEAD_LIMIT`].
fn exit_status(e: &mut Elect) -> Option<i32> {
    let deadline = Instant::now() + LEAD_LIMIT;
    loop {
        if let Some(st) = e.child.try_wait().unwrap() {
            return st.code();
        }
        assert!(Instant::now() < deadline, "rzk elect did not exit");
        thread::sleep(Duration::from_millis(10));
    }
}

fn stderr(e: &mut Elect) -> String {
    let mut err = String::new();
    e.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    err
}

#[test]
fn a_sigkilled_elect_takes_its_command_and_grandchild_down_within_a_second() {
    let s = server();
    let log = tmp("sigkill-log");
    // A command that ignores SIGTERM, with the longest grace: no one is left to wait for it.
    let flags = ["--session-timeout-ms", "2000", "--grace-ms", "10000"];
    let mut a = elect_with(&s.connect_string(), "/w/kill", "a", &flags, DEAF, &log);
    let pids = leading(&a);
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    if let Err(e) = gone_within(pids, STOP_LIMIT) {
        panic!("{STOP_LIMIT:?} after SIGKILL of rzk elect: {e}");
    }
}

#[test]
fn a_stopped_elect_has_its_command_stopped_before_the_next_leader_starts() {
    let s = server();
    let cs = s.connect_string();
    let log = tmp("sigstop-log");
    let a = elect(&cs, "/w/stop", "a", "2000", &log);
    let pids = leading(&a);
    let b = elect(&cs, "/w/stop", "b", "2000", &log);
    thread::sleep(Duration::from_millis(300));
    assert!(signal(a.child.id(), "STOP"));
    let stopped = Instant::now();
    // Each round checks a's processes before the log, so "gone" is seen no later than b.
    let mut gone_at = None;
    let b_at = loop {
        if gone_at.is_none() && !alive(pids.0) && !alive(pids.1) {
            gone_at = Some(stopped.elapsed());
        }
        if log_lines(&log).iter().any(|l| l == "start b") {
            break stopped.elapsed();
        }
        assert!(stopped.elapsed() < LEAD_LIMIT, "b never led: {:?}", log_lines(&log));
        thread::sleep(Duration::from_millis(5));
    };
    let gone_at = gone_at.unwrap_or_else(|| {
        panic!(
            "a's command still ran when b started ({b_at:?} after SIGSTOP): {:?}",
            log_lines(&log)
        )
    });
    // The server expired a's session (its last acknowledgement + 2 s), then b started; a's
    // group was stopped before that, within the session timeout of the SIGSTOP.
    assert!(gone_at < Duration::from_millis(2000), "gone {gone_at:?} after SIGSTOP");
    let lines = log_lines(&log);
    let stop_a = lines.iter().position(|l| l == "stop a");
    let start_b = lines.iter().position(|l| l == "start b");
    assert!(stop_a < start_b, "a's command got its SIGTERM first: {lines:?}");
    drop(b);
}

#[test]
fn a_signalled_elect_stops_its_whole_group_and_exits_with_the_shells_status() {
    let s = server();
    let cs = s.connect_string();
    for (sig, status) in [("TERM", 143), ("INT", 130)] {
        let log = tmp(&format!("signal-{sig}-log"));
        let mut a = elect(&cs, &format!("/w/{sig}"), "a", "2000", &log);
        let pids = leading(&a);
        assert!(signal(a.child.id(), sig));
        assert_eq!(exit_status(&mut a), Some(status), "after SIG{sig}");
        if let Err(e) = gone_within(pids, STOP_LIMIT) {
            panic!("after SIG{sig}: {e}; {}", stderr(&mut a));
        }
        // The command had its grace: SIGTERM first.
        assert!(log_lines(&log).contains(&"stop a".to_string()), "{:?}", log_lines(&log));
    }
}

#[test]
fn a_killed_watchdog_has_elect_kill_the_group() {
    let s = server();
    let log = tmp("watchdog-log");
    let mut a = elect(&s.connect_string(), "/w/watchdog", "a", "2000", &log);
    let pids = leading(&a);
    let watchdog = ppid(pids.0);
    assert_ne!(watchdog, a.child.id(), "the command runs under a watchdog");
    assert!(signal(watchdog, "KILL"));
    gone_within(pids, STOP_LIMIT).unwrap();
    assert_eq!(exit_status(&mut a), Some(137), "{}", stderr(&mut a));
}

#[test]
fn the_command_reads_elects_stdin_and_a_missing_one_is_reported() {
    let s = server();
    let cs = s.connect_string();
    let out = tmp("stdin-out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", &cs, "elect", "/w/stdin", "--", "sh", "-c", "cat > \"$OUT\""])
        .env("OUT", &out)
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"through the watchdog\n").unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "through the watchdog\n");

    let o = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", &cs, "elect", "/w/missing", "--", "/no/such/command"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot run \"/no/such/command\""), "{err}");
}
