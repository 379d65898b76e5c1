//! An Apache Curator 5.4 participant in a child JVM (tests/java/CuratorParticipant.java),
//! compiled once per test binary with the Debian jars.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const JARS: &[&str] = &[
    "curator-client",
    "curator-framework",
    "curator-recipes",
    "zookeeper",
    "zookeeper-jute",
    "guava",
    "slf4j-api",
    "slf4j-simple",
];

fn classpath() -> String {
    JARS.iter().map(|j| format!("/usr/share/java/{j}.jar")).collect::<Vec<_>>().join(":")
}

/// Compiles the participant (once per process) and returns the class directory.
fn compiled() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let src =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/java/CuratorParticipant.java");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("curator-participant");
        let class = out.join("CuratorParticipant.class");
        let fresh = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        if fresh(&class).is_none() || fresh(&class) < fresh(&src) {
            std::fs::create_dir_all(&out).expect("class dir");
            let o = Command::new("javac")
                .args(["-nowarn", "-d"])
                .arg(&out)
                .arg("-cp")
                .arg(classpath())
                .arg(&src)
                .output()
                .expect("javac (is the JDK installed?)");
            assert!(o.status.success(), "javac failed: {}", String::from_utf8_lossy(&o.stderr));
        }
        out
    })
    .clone()
}

/// A running Curator participant and the lines it printed, with their arrival times.
pub struct JavaParticipant {
    pub id: String,
    child: Child,
    stdin: ChildStdin,
    lines: Arc<Mutex<Vec<(Instant, String)>>>,
    cursor: std::collections::HashMap<String, usize>,
}

impl JavaParticipant {
    /// Starts `CuratorParticipant hosts path recipe id work_ms` and waits until it has joined.
    pub async fn start(hosts: &str, path: &str, recipe: &str, id: &str, work_ms: u64) -> Self {
        let dir = compiled();
        let mut child = Command::new("java")
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=error")
            .arg("-cp")
            .arg(format!("{}:{}", dir.display(), classpath()))
            .arg("CuratorParticipant")
            .args([hosts, path, recipe, id, &work_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start java");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let lines: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
        let l = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                l.lock().unwrap().push((Instant::now(), line));
            }
        });
        let mut p =
            JavaParticipant { id: id.into(), child, stdin, lines, cursor: Default::default() };
        p.expect("joined", Duration::from_secs(30)).await;
        p
    }

    /// Waits for the next line starting with `prefix` (skipping others); returns its arrival
    /// time and the rest of the line.
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
            assert!(Instant::now() < end, "{}: no {prefix:?} line within {within:?}", self.id);
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<(Instant, String)> {
        self.lines.lock().unwrap().clone()
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
