//! `rzk leader --recipe race --watch` against the in-process server and Apache ZooKeeper: a
//! race election's holder is printed live as it changes (nobody, then `a`, then, once `a` is
//! killed and its session expires, `b`), one JSON line per change.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use support::{Kind, Server};

/// How long a change may take to be printed on a loaded machine (a killed holder's session
/// must expire first).
const CHANGE_LIMIT: Duration = Duration::from_secs(15);

both_servers! {
    race_watch => a_race_holder_change_is_printed_live;
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rzk elect --recipe race` as `id`, holding with a command that sleeps.
fn candidate(cs: &str, path: &str, id: &str) -> Killed {
    let child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", cs, "elect", path, "--id", id, "--recipe", "race"])
        .args(["--session-timeout-ms", "1000", "--grace-ms", "100", "--", "sleep", "1000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Killed(child)
}

/// The next printed line that contains `what`, skipping the others.
fn next_with(lines: &mpsc::Receiver<String>, what: &str) -> String {
    loop {
        match lines.recv_timeout(CHANGE_LIMIT) {
            Ok(line) if line.contains(what) => return line,
            Ok(_) => {}
            Err(e) => panic!("no line with {what} within {CHANGE_LIMIT:?}: {e}"),
        }
    }
}

fn a_race_holder_change_is_printed_live(kind: Kind) {
    let s = Server::start(kind);
    let cs = s.hosts();
    let path = "/e/race-watch";
    let mut watch = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", &cs, "leader", path, "--recipe", "race", "--watch", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(watch.stdout.take().unwrap());
    let _watch = Killed(watch);
    let (tx, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let first = lines.recv_timeout(CHANGE_LIMIT).expect("the first view");
    assert_eq!(first, "{\"leader\":null,\"participants\":[]}");
    let a = candidate(&cs, path, "a");
    next_with(&lines, "\"id\":\"a\"");
    let _b = candidate(&cs, path, "b");
    // SIGKILL: a's node goes with its session, and b wins the next race.
    drop(a);
    let line = next_with(&lines, "\"id\":\"b\"");
    assert!(line.starts_with("{\"leader\":{\"id\":\"b\""), "{line}");
}
