//! A participant process (`src/bin/participant.rs`) and the lines it prints, with their
//! arrival times.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rzk_testkit::lines::{Line, Lines};

use super::checker::TermRecord;

/// The token of an `elected <token> <node>` line's rest.
pub fn token(elected: &str) -> i64 {
    elected.split(' ').next().and_then(|t| t.parse().ok()).expect("elected <token> <node>")
}

/// Whether an `elected` line is a Curator holder's hold of a node of an earlier session
/// (tests/java/CuratorHolder.java marks it `stale`).
pub fn stale(elected: &str) -> bool {
    elected.ends_with(" stale")
}

/// The participant binary (`src/bin/participant.rs`), built by cargo for the tests.
fn participant_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rzk-recipes-participant"))
}

pub struct Proc {
    pub id: String,
    recipe: String,
    child: Child,
    lines: Lines,
}

impl Proc {
    pub fn spawn(hosts: &str, path: &str, witness: &str, id: &str, recipe: &str) -> Proc {
        Proc::spawn_with(hosts, path, id, recipe, &["--witness", witness])
    }

    /// A participant with further arguments (`--work-ms`, ...) instead of a witness.
    pub fn spawn_with(hosts: &str, path: &str, id: &str, recipe: &str, more: &[&str]) -> Proc {
        let child = Command::new(participant_bin())
            .args(["--connect", hosts, "--path", path, "--id", id, "--recipe", recipe])
            .args(more)
            .args(["--session-timeout-ms", "4000"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn participant");
        Proc::adopt(id, recipe, child)
    }

    /// A process that prints the participant's lines on its piped stdout (a Curator holder).
    pub fn adopt(id: &str, recipe: &str, mut child: Child) -> Proc {
        let lines = Lines::capture(id, child.stdout.take().expect("stdout"));
        Proc { id: id.into(), recipe: recipe.into(), child, lines }
    }

    /// The recipe it was started with (`--recipe`).
    pub fn recipe(&self) -> &str {
        &self.recipe
    }

    pub async fn expect(&mut self, prefix: &str, within: Duration) -> Line {
        self.lines.expect(prefix, within).await
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

    /// The holds this process reported, each from its `elected` line to the next `lost` line,
    /// or to `end` (the kill, or now) for one still running. A Curator holder's hold of a node
    /// of an earlier session (`elected ... stale`, see tests/java/CuratorHolder.java) is left
    /// out: Curator holds it by its own account only, no check on the server passes for it once
    /// that session has expired, and the witness writes judge what it did meanwhile.
    pub fn terms(&self, end: Instant) -> Vec<TermRecord> {
        let mut terms: Vec<TermRecord> = Vec::new();
        for (at, l) in self.lines.all() {
            if let Some(rest) = l.strip_prefix("elected ") {
                if stale(&l) {
                    eprintln!("{}: Curator holds a node of an earlier session: {l}", self.id);
                    continue;
                }
                let node = rest.split(' ').nth(1).unwrap_or_default().to_string();
                let (participant, token) = (self.id.clone(), token(rest));
                terms.push(TermRecord { participant, node, token, start: at, end: None });
            } else if l.starts_with("lost") {
                if let Some(t) = terms.last_mut().filter(|t| t.end.is_none()) {
                    t.end = Some(at);
                }
            }
        }
        for t in terms.iter_mut().filter(|t| t.end.is_none()) {
            t.end = Some(end);
        }
        terms
    }

    pub fn elected_count(&self) -> usize {
        self.lines.lock().iter().filter(|(_, l)| l.starts_with("elected")).count()
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
    pub fn lines(&self) -> Vec<Line> {
        self.lines.all()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
