//! Java processes on the Debian jars: the one classpath of every Rust test suite is read from
//! `tests/support/java-classpath.txt` at the repository's root (one jar a line; blank lines and
//! `#` comments ignored), the file the Python suites read too.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The classpath file, relative to the repository's root.
pub const CLASSPATH_FILE: &str = "tests/support/java-classpath.txt";

/// The repository's root (this crate is `crates/rzk-testkit`).
fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The jars of `text`, in the classpath file's format.
fn parse_classpath(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

/// The jars of the classpath file joined with `:`, read once per process.
pub fn classpath() -> &'static str {
    static CLASSPATH: OnceLock<String> = OnceLock::new();
    CLASSPATH.get_or_init(|| {
        let file = repo_root().join(CLASSPATH_FILE);
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("read the Java classpath {}: {e}", file.display()));
        let jars = parse_classpath(&text);
        assert!(!jars.is_empty(), "no jar in {}", file.display());
        jars.join(":")
    })
}

/// `java -cp <dirs>:<classpath>`, to which the caller adds JVM options, the main class and
/// its arguments.
pub fn java(class_dirs: &[&Path]) -> Command {
    let mut cp: Vec<String> = class_dirs.iter().map(|d| d.display().to_string()).collect();
    cp.push(classpath().to_string());
    let mut c = Command::new("java");
    c.arg("-cp").arg(cp.join(":"));
    c
}

/// Compiles `source` against the classpath into `out`, unless its class file there is newer
/// than every `.java` file beside it, and returns `out`. The classes it uses from the sources
/// beside it are compiled with it. Test processes running side by side compile one at a time
/// (an exclusive lock on `out`'s lock file), so none loads a class file still being written.
pub fn compile(source: &Path, out: &Path) -> PathBuf {
    let lock_path = out.with_extension("lock");
    if let Some(parent) = lock_path.parent() {
        std::fs::create_dir_all(parent).expect("class dir's parent");
    }
    let lock = crate::slots::lock_file(&lock_path);
    lock.lock().unwrap_or_else(|e| panic!("lock {}: {e}", lock_path.display()));
    let class = out.join(source.file_stem().expect("a .java file")).with_extension("class");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let dir = source.parent().expect("a source directory");
    let newest_source = std::fs::read_dir(dir)
        .expect("read the source directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .filter_map(|p| modified(&p))
        .max();
    if modified(&class).is_none() || modified(&class) < newest_source {
        std::fs::create_dir_all(out).expect("class dir");
        let o = Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(out)
            .arg("-cp")
            .arg(classpath())
            .arg("-sourcepath")
            .arg(dir)
            .arg(source)
            .output()
            .expect("javac (is the JDK installed?)");
        assert!(o.status.success(), "javac failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    out.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::{classpath, parse_classpath};

    #[test]
    fn comments_and_blank_lines_are_not_jars() {
        let text = "# a comment\n\n/a.jar\n  /b.jar  \n#/c.jar\n";
        assert_eq!(parse_classpath(text), ["/a.jar", "/b.jar"]);
    }

    #[test]
    fn the_repository_names_the_zookeeper_jar() {
        assert!(classpath().split(':').any(|j| j.ends_with("/zookeeper.jar")), "{}", classpath());
    }
}
