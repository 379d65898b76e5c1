//! What a seed's replay relies on in the code the world runs, checked in the sources: every
//! `tokio::select!` in rzk-client and rzk-recipes is `biased;` (otherwise tokio picks the
//! first branch polled at random, and two runs of one seed part ways where several branches
//! are ready), and neither reads the standard clock: the client uses tokio's `Instant`, the
//! recipes read tokio's clock through `clock::now`, which a paused runtime controls.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file, line)` of every offence in the libraries' sources (their `bin/` excepted).
fn offences(check: impl Fn(&Path, &[&str], usize) -> bool) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["rzk-client", "rzk-recipes"] {
        sources(&root.join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 40, "found only {} source files under {}", files.len(), root.display());
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.components().any(|c| c.as_os_str() == "bin")) {
        let text = std::fs::read_to_string(f).expect("a readable source");
        let lines: Vec<&str> = text.lines().collect();
        for i in 0..lines.len() {
            if !lines[i].trim_start().starts_with("//") && check(f, &lines, i) {
                found.push(format!("{}:{}", f.display(), i + 1));
            }
        }
    }
    found
}

#[test]
fn every_select_in_the_client_and_the_recipes_is_biased() {
    let unbiased = offences(|_, lines, i| {
        let opens =
            lines[i].split("select!").nth(1).is_some_and(|rest| rest.trim_start().starts_with('{'));
        opens && lines.get(i + 1).map(|l| l.trim()) != Some("biased;")
    });
    assert!(unbiased.is_empty(), "select! without `biased;` next: {unbiased:?}");
}

#[test]
fn the_client_and_the_recipes_read_no_real_clock() {
    let real = offences(|file, lines, i| {
        let line = lines[i];
        if file.components().any(|c| c.as_os_str() == "rzk-client") {
            // The client's `Instant` is tokio's; it must not import the standard one, on one
            // line or in a `use std::time::{...}` block.
            let block = line.contains("use std::time::{") && !line.contains('}');
            let imported = if block {
                lines[i..].iter().take_while(|l| !l.contains('}')).any(|l| l.contains("Instant"))
                    || lines[i..]
                        .iter()
                        .find(|l| l.contains('}'))
                        .is_some_and(|l| l.contains("Instant"))
            } else {
                line.contains("use std::time::") && line.contains("Instant")
            };
            return imported || line.contains("SystemTime::now()");
        }
        // A service instance's registration time is the wall clock's, as curator-x-discovery's.
        let wall_clock_by_design = file.ends_with("discovery/instance.rs");
        (line.contains("SystemTime::now()") && !wall_clock_by_design)
            || (line.contains("Instant::now()")
                && !line.contains("tokio::time::Instant::now()")
                && !line.contains("clock::now()"))
    });
    assert!(real.is_empty(), "the real clock read at: {real:?}");
}
