//! The server's log on standard error: plain text unless a person is watching it.

use std::ffi::OsStr;
use std::io::IsTerminal as _;

/// Colour only on a terminal, and never when `NO_COLOR` is set to anything non-empty
/// (<https://no-color.org>): escapes in a file, a pipe, journald or a CI log are noise.
fn colour(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

/// Installs the subscriber; `RZK_LOG` sets the level (default info).
pub(crate) fn init() {
    let level = std::env::var("RZK_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    let ansi = colour(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR").as_deref());
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(!colour(false, None));
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(false, Some(OsStr::new("1"))));
        // An empty NO_COLOR does not count.
        assert!(colour(true, Some(OsStr::new(""))));
    }
}
