//! Apache Curator 5.4 programs in child JVMs, compiled once per test binary against the Debian
//! jars: the election participant (tests/java/CuratorParticipant.java), driven over stdin, and
//! the lock holder (tests/java/CuratorHolder.java), which prints the Rust participant's lines
//! and so runs as a [`Proc`].

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rzk_testkit::java;
use rzk_testkit::lines::{Line, Lines};

use super::participant::Proc;

/// Compiles `tests/java/<class>.java` (once per class and process); returns its class directory.
fn compiled(class: &str) -> PathBuf {
    static DIRS: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut dirs = DIRS.get_or_init(Default::default).lock().unwrap();
    let dir = dirs.entry(class.to_string()).or_insert_with(|| {
        let src =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/java/{class}.java"));
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("java-{class}"));
        java::compile(&src, &out)
    });
    dir.clone()
}

/// `java` running `class` (compiled first) with the tests' small-heap, quick-start options;
/// the caller adds the program's arguments.
pub fn jvm(class: &str) -> Command {
    let mut cmd = java::java(&[&compiled(class)]);
    cmd.args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=error")
        .arg(class);
    cmd
}

/// A Curator lock holder (`mutex` or `semaphore:N`) on `path` that, while holding, writes to
/// `witness` with a write fenced by its node: the same lines as the Rust participant's
/// [`Proc::spawn`], read the same way.
pub fn holder(hosts: &str, path: &str, witness: &str, id: &str, recipe: &str) -> Proc {
    let child = jvm("CuratorHolder")
        .args([hosts, path, id, recipe, witness])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start java");
    Proc::adopt(id, recipe, child)
}

/// A running Curator participant and the lines it printed, with their arrival times.
pub struct JavaParticipant {
    pub id: String,
    child: Child,
    stdin: ChildStdin,
    lines: Lines,
}

impl JavaParticipant {
    /// Starts `CuratorParticipant hosts path recipe id work_ms` and waits until it has joined.
    pub async fn start(hosts: &str, path: &str, recipe: &str, id: &str, work_ms: u64) -> Self {
        let mut child = jvm("CuratorParticipant")
            .args([hosts, path, recipe, id, &work_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start java");
        let stdin = child.stdin.take().expect("stdin");
        let lines = Lines::capture(id, child.stdout.take().expect("stdout"));
        let mut p = JavaParticipant { id: id.into(), child, stdin, lines };
        p.expect("joined", Duration::from_secs(30)).await;
        p
    }

    /// Waits for the next line starting with `prefix` (skipping others); returns its arrival
    /// time and the rest of the line.
    pub async fn expect(&mut self, prefix: &str, within: Duration) -> Line {
        self.lines.expect(prefix, within).await
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<Line> {
        self.lines.all()
    }

    /// Sends a command line.
    pub fn send(&mut self, cmd: &str) -> Instant {
        let at = Instant::now();
        writeln!(self.stdin, "{cmd}").expect("write to java");
        self.stdin.flush().expect("flush");
        at
    }
}

impl Drop for JavaParticipant {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
