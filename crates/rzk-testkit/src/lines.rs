//! The lines a child process prints, each with the moment it arrived, read on a thread of
//! their own so that a test can wait for one without blocking its runtime.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often `expect` looks for a new line.
const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// A line and when it arrived.
pub type Line = (Instant, String);

/// Every line read so far from one stream, and a cursor per prefix for `expect`.
pub struct Lines {
    who: String,
    lines: Arc<Mutex<Vec<Line>>>,
    cursor: HashMap<String, usize>,
}

impl Lines {
    /// Reads `stream` line by line until it ends; `who` names the process in failures.
    pub fn capture(who: &str, stream: impl Read + Send + 'static) -> Lines {
        let lines: Arc<Mutex<Vec<Line>>> = Arc::default();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { return };
                sink.lock().unwrap().push((Instant::now(), line));
            }
        });
        Lines { who: who.into(), lines, cursor: HashMap::new() }
    }

    /// Waits for the next line starting with `prefix` (skipping others); returns its arrival
    /// time and the rest of the line, trimmed. Panics after `within`.
    pub async fn expect(&mut self, prefix: &str, within: Duration) -> Line {
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
            assert!(Instant::now() < end, "{}: no {prefix:?} line within {within:?}", self.who);
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Every line so far.
    pub fn all(&self) -> Vec<Line> {
        self.lines.lock().unwrap().clone()
    }

    /// Every line so far, without a copy.
    pub fn lock(&self) -> MutexGuard<'_, Vec<Line>> {
        self.lines.lock().unwrap()
    }
}
