//! An Apache Curator 5.4 participant in a child JVM (tests/java/CuratorParticipant.java),
//! compiled once per test binary against the Debian jars.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rzk_testkit::java;
use rzk_testkit::lines::{Line, Lines};

/// Compiles the participant (once per process) and returns the class directory.
fn compiled() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let src =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/java/CuratorParticipant.java");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("curator-participant");
        java::compile(&src, &out)
    })
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
        let mut child = java::java(&[compiled()])
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=error")
            .arg("CuratorParticipant")
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
