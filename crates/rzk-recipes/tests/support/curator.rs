//! One Apache Curator 5.4 recipe operation in a child JVM (tests/java/CuratorRecipes.java:
//! queue, DistributedAtomicLong, SharedCount, barriers, CuratorCache), compiled once per test
//! binary.

use super::java::jvm;

/// Runs `CuratorRecipes hosts path args...` to the end; returns its stdout lines before the
/// final `done`. Panics if it fails.
pub async fn run(hosts: &str, path: &str, args: &[&str]) -> Vec<String> {
    let mut cmd = jvm("CuratorRecipes");
    cmd.args([hosts, path]).args(args);
    let out =
        tokio::task::spawn_blocking(move || cmd.output()).await.expect("join").expect("run java");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    assert!(
        out.status.success() && lines.last().map(String::as_str) == Some("done"),
        "CuratorRecipes {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines.pop();
    lines
}

/// A Java Curator `CuratorCache` running in a child JVM (`CuratorRecipes hosts path cache`),
/// its events read as they come; killed on drop.
pub struct JavaCache {
    child: std::process::Child,
    lines: rzk_testkit::lines::Lines,
}

impl JavaCache {
    /// Starts the cache of `path`.
    pub fn start(hosts: &str, path: &str) -> JavaCache {
        JavaCache::start_with(hosts, path, &["cache"])
    }

    /// Starts a cache command of `CuratorRecipes` (`cache`, `service-cache NAME`).
    pub fn start_with(hosts: &str, path: &str, args: &[&str]) -> JavaCache {
        let mut child = jvm("CuratorRecipes")
            .args([hosts, path])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("start java");
        let lines =
            rzk_testkit::lines::Lines::capture("CuratorCache", child.stdout.take().unwrap());
        JavaCache { child, lines }
    }

    /// The next event line (`+PATH DATA`, `~PATH DATA`, `-PATH`, `init`; `set [IDS]` of a
    /// service cache), within `within`.
    pub async fn next(&mut self, within: std::time::Duration) -> String {
        self.lines.expect("event ", within).await.1
    }
}

impl Drop for JavaCache {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
