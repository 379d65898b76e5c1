//! A participant process (`src/bin/participant.rs`) and the lines it prints, with their
//! arrival times.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The participant binary (`src/bin/participant.rs`), built by cargo for the tests.
fn participant_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rzk-election-participant"))
}

pub struct Proc {
    pub id: String,
    child: Child,
    lines: Arc<Mutex<Vec<(Instant, String)>>>,
    cursor: std::collections::HashMap<String, usize>,
}

impl Proc {
    pub fn spawn(hosts: &str, path: &str, witness: &str, id: &str, recipe: &str) -> Proc {
        let mut child = Command::new(participant_bin())
            .args(["--connect", hosts, "--path", path, "--id", id, "--recipe", recipe])
            .args(["--witness", witness, "--session-timeout-ms", "4000"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn participant");
        let out = child.stdout.take().expect("stdout");
        let lines: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                l.lock().unwrap().push((Instant::now(), line));
            }
        });
        Proc { id: id.into(), child, lines, cursor: Default::default() }
    }

    pub async fn expect(&mut self, prefix: &str, within: Duration) -> (Instant, String) {
        let end = Instant::now() + within;
        loop {
            {
                // One cursor per prefix: lines may come in any order ("elected" before
                // "joined" for a participant that leads at once).
                let lines = self.lines.lock().unwrap();
                let cursor = self.cursor.entry(prefix.to_string()).or_insert(0);
                while *cursor < lines.len() {
                    let (at, line) = &lines[*cursor];
                    *cursor += 1;
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return (*at, rest.trim().to_string());
                    }
                }
            }
            assert!(Instant::now() < end, "{}: no {prefix:?} within {within:?}", self.id);
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    pub fn kill(&mut self) -> Instant {
        let at = Instant::now();
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
        at
    }

    /// `(mzxid, token)` of every acknowledged witness write.
    pub fn writes(&self) -> Vec<(i64, i64)> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(_, l)| {
                let rest = l.strip_prefix("write ok ")?;
                let mut it = rest.split(' ');
                let token = it.next()?.parse().ok()?;
                let mzxid = it.next()?.parse().ok()?;
                Some((mzxid, token))
            })
            .collect()
    }

    pub fn elected_count(&self) -> usize {
        self.lines.lock().unwrap().iter().filter(|(_, l)| l.starts_with("elected")).count()
    }
}

impl Proc {
    /// Sends a signal (`STOP`, `CONT`, ...) to the process.
    pub fn signal(&self, sig: &str) -> Instant {
        let at = Instant::now();
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill -{sig} failed");
        at
    }

    /// Every line so far, with its arrival time.
    pub fn lines(&self) -> Vec<(Instant, String)> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
