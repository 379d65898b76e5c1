//! The server's log on standard error: plain text unless a person is watching it, without
//! its own timestamps when the systemd journal (which stamps every line) is reading it, at the
//! level the flag, `RUST_LOG` or `RZK_LOG` sets.

use std::ffi::OsStr;
use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use crate::error::CliError;

/// The filter when neither the flag nor the environment sets one.
const DEFAULT_FILTER: &str = "info";

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LogArgs {
    /// What to log: a level (error, warn, info, debug, trace) or tracing's directives
    /// (`info,rzk_server=debug`) [default: $RUST_LOG, else $RZK_LOG, else info].
    #[arg(long, value_name = "FILTER")]
    log_level: Option<String>,
    /// Whether each line carries its own time: `auto` leaves it out when standard error is
    /// the systemd journal (`JOURNAL_STREAM` names it), which stamps every line itself.
    #[arg(long, value_enum, default_value_t = Timestamps::Auto)]
    log_timestamps: Timestamps,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Timestamps {
    Auto,
    Always,
    Never,
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to anything non-empty
/// (<https://no-color.org>): escapes in a file, a pipe, journald or a CI log are noise.
fn colour(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}

/// Whether standard error is the journal's stream: systemd sets `JOURNAL_STREAM` to its
/// `device:inode`, and a stderr redirected elsewhere inside the service no longer matches
/// (systemd.exec(5)).
fn journal_is_stderr(journal_stream: Option<&OsStr>, stderr: Option<(u64, u64)>) -> bool {
    let Some((dev, ino)) = journal_stream.and_then(OsStr::to_str).and_then(|s| s.split_once(':'))
    else {
        return false;
    };
    let named = dev.parse::<u64>().ok().zip(ino.parse::<u64>().ok());
    named.is_some() && named == stderr
}

/// Standard error's `(device, inode)`.
fn stderr_identity() -> Option<(u64, u64)> {
    let st = rustix::fs::fstat(std::io::stderr()).ok()?;
    Some((st.st_dev, st.st_ino))
}

/// The filter: the flag's, else `RUST_LOG`'s, else `RZK_LOG`'s, else info.
///
/// # Errors
/// A filter that does not parse, with where it came from.
fn filter(args: &LogArgs) -> Result<EnvFilter, CliError> {
    let (source, text) = match &args.log_level {
        Some(flag) => ("--log-level", flag.clone()),
        None => ["RUST_LOG", "RZK_LOG"]
            .into_iter()
            .find_map(|var| Some((var, std::env::var(var).ok().filter(|v| !v.is_empty())?)))
            .unwrap_or(("the default", DEFAULT_FILTER.to_string())),
    };
    EnvFilter::try_new(&text)
        .map_err(|e| CliError::usage(format!("{source} {text:?} is not a log filter: {e}")))
}

/// Installs the subscriber.
///
/// # Errors
/// A log filter that does not parse.
pub(crate) fn init(args: &LogArgs) -> Result<(), CliError> {
    let filter = filter(args)?;
    let ansi = colour(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR").as_deref());
    let timestamps = match args.log_timestamps {
        Timestamps::Always => true,
        Timestamps::Never => false,
        Timestamps::Auto => {
            !journal_is_stderr(std::env::var_os("JOURNAL_STREAM").as_deref(), stderr_identity())
        }
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    if timestamps {
        builder.init();
    } else {
        builder.without_time().init();
    }
    Ok(())
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

    #[test]
    fn the_journal_is_stderr_only_when_its_stream_names_stderr() {
        let named = Some(OsStr::new("64769:1234"));
        assert!(journal_is_stderr(named, Some((64769, 1234))));
        // Redirected inside the service: another file.
        assert!(!journal_is_stderr(named, Some((64769, 99))));
        assert!(!journal_is_stderr(None, Some((64769, 1234))));
        assert!(!journal_is_stderr(Some(OsStr::new("garbage")), Some((0, 0))));
        assert!(!journal_is_stderr(Some(OsStr::new(":")), Some((0, 0))));
        assert!(!journal_is_stderr(named, None));
    }

    #[test]
    fn a_bad_filter_is_refused_with_its_source() {
        let args = LogArgs { log_level: Some("info,[".into()), log_timestamps: Timestamps::Auto };
        let e = filter(&args).unwrap_err();
        assert!(e.message.contains("--log-level"), "{}", e.message);
        let ok = LogArgs { log_level: Some("rzk_server=debug".into()), ..args };
        assert!(filter(&ok).is_ok());
    }
}
