//! How a command's error ends the process: its message on standard error and its exit status.

use std::process::ExitCode;

use rzk_client as zk;

/// An error that ends the command, with the exit status it maps to.
#[derive(Debug)]
pub(crate) struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    /// Something the user can fix: a missing node, a bad path, an unreachable server (2).
    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError { code: 2, message: message.into() }
    }

    /// Anything else (1).
    pub(crate) fn runtime(message: impl Into<String>) -> CliError {
        CliError { code: 1, message: message.into() }
    }

    pub(crate) fn exit(self) -> ExitCode {
        eprintln!("rzk: {}", self.message);
        ExitCode::from(self.code)
    }
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        CliError::runtime(one_line(&e))
    }
}

/// An error and its causes on one line, each cause once. The libraries' errors name their
/// cause in their own message as well as returning it as their source, so `{:#}` printed it
/// again at every level ("cannot listen on A: Address already in use (os error 98): Address
/// already in use (os error 98)").
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// A node operation's error on `path`, as a command reports it: what the user can mend is a
/// usage error (exit 2), the rest a runtime one.
pub(crate) fn zk_error(path: &str, e: zk::Error) -> CliError {
    let msg = match &e {
        zk::Error::NoNode => format!("node {path} does not exist"),
        zk::Error::NodeExists => format!("node {path} already exists"),
        zk::Error::NotEmpty => format!("node {path} has children (use delete -r)"),
        zk::Error::BadVersion => format!("node {path} is not at the expected version"),
        zk::Error::NoAuth => format!("not authorized for {path}"),
        zk::Error::NoChildrenForEphemerals => {
            format!("{path}: ephemeral nodes cannot have children")
        }
        zk::Error::InvalidAcl => format!("{path}: invalid ACL"),
        zk::Error::SessionClosedRequireAuth | zk::Error::AuthFailed => {
            format!("{path}: the server requires credentials it accepts (--auth, --auth-file): {e}")
        }
        zk::Error::BadArguments(why) => format!("bad path {path:?}: {why}"),
        zk::Error::NotReadOnly => {
            format!("{path}: a read-only server serves this session (--read-only): no writes")
        }
        zk::Error::Unimplemented => {
            format!("{path}: the server does not support this (TTL nodes need extended types)")
        }
        _ => return CliError::runtime(format!("{path}: {e}")),
    };
    CliError::usage(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that names its source in its message, as the libraries' errors do.
    #[derive(Debug)]
    struct Named(std::io::Error);

    impl std::fmt::Display for Named {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot listen: {}", self.0)
        }
    }

    impl std::error::Error for Named {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn each_cause_is_printed_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::AddrInUse, "in use");
        let named = anyhow::Error::new(Named(io())).context("starting the server");
        assert_eq!(one_line(&named), "starting the server: cannot listen: in use");
        // A cause the message above it does not name is kept.
        let bare = anyhow::Error::new(io()).context("starting the server");
        assert_eq!(one_line(&bare), "starting the server: in use");
    }
}
