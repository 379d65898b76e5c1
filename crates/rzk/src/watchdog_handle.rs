//! The owner's side of a watchdog (see [`crate::watchdog`]): start a command under it, renew
//! its stop time, stop it, wait for its exit status.
//!
//! Dropping a [`Watched`] closes the channel, which the watchdog takes as the owner's death:
//! it stops the command. Nothing here ever kills the watchdog first, since that would orphan
//! the command.

use std::io::{IoSlice, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use rustix::process::{kill_process_group, Pid, Signal};

use crate::error::CliError;
use crate::watchdog_proto::{monotonic_ns, FromWatchdog, ToWatchdog, MESSAGE_LEN};

/// The hidden subcommand that runs [`crate::watchdog`].
pub(crate) const WATCHDOG_SUBCOMMAND: &str = "__watchdog";
/// How long the owner waits for the watchdog to report the command started.
const START_LIMIT: Duration = Duration::from_secs(10);
/// How long past the grace the owner waits for a stopping watchdog before it kills the
/// command's group itself (the watchdog allows the command the grace, then SIGKILL).
const STOP_SLACK: Duration = Duration::from_secs(1);

/// A command running under a watchdog.
pub(crate) struct Watched {
    watchdog: tokio::process::Child,
    control: UnixStream,
    /// The command's pid, which is also its process group id.
    pid: Pid,
    stop_at: Instant,
}

fn watchdog_program() -> std::path::PathBuf {
    // This very binary, even if it was replaced on disk since it started.
    if cfg!(target_os = "linux") {
        "/proc/self/exe".into()
    } else {
        std::env::current_exe().unwrap_or_else(|_| "rzk".into())
    }
}

impl Watched {
    /// Starts `command` (with `envs` added to its environment) under a watchdog that stops it
    /// at `stop_at` unless [renewed](Watched::renew), allowing it `grace` between SIGTERM
    /// and SIGKILL.
    ///
    /// # Errors
    /// A usage error if the command cannot be run; a runtime error if the watchdog cannot.
    pub(crate) async fn start(
        command: &[String],
        envs: &[(&str, String)],
        grace: Duration,
        stop_at: Instant,
    ) -> Result<Watched, CliError> {
        let failed = |e: std::io::Error| CliError::runtime(format!("starting the watchdog: {e}"));
        let (control, theirs) = UnixStream::pair().map_err(failed)?;
        let mut cmd = tokio::process::Command::new(watchdog_program());
        cmd.arg(WATCHDOG_SUBCOMMAND)
            .arg("--grace-ms")
            .arg(grace.as_millis().to_string())
            .arg("--")
            .args(command)
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .process_group(0);
        let mut watchdog = cmd.spawn().map_err(failed)?;
        // Only the watchdog may hold its end: when it exits, our writes fail.
        drop(cmd);
        let first = ToWatchdog::Renew { stop_at_ns: monotonic_ns(stop_at) };
        let reply = match send_first(&control, first) {
            Ok(()) => read_reply(&control).await,
            Err(e) => Err(e),
        };
        match reply {
            Ok(FromWatchdog::Started { pid }) => {
                control.set_nonblocking(true).map_err(failed)?;
                let pid = i32::try_from(pid).ok().and_then(Pid::from_raw);
                let pid = pid.ok_or_else(|| failed(std::io::Error::other("a bad pid")))?;
                Ok(Watched { watchdog, control, pid, stop_at })
            }
            Ok(FromWatchdog::SpawnFailed { errno }) => {
                let _ = watchdog.wait().await;
                let e = std::io::Error::from_raw_os_error(errno);
                Err(CliError::usage(format!("cannot run {:?}: {e}", command[0])))
            }
            Err(e) => {
                // Closing the channel stops the watchdog, and its command if it started one.
                drop(control);
                let _ = tokio::time::timeout(START_LIMIT, watchdog.wait()).await;
                Err(failed(e))
            }
        }
    }

    /// Moves the stop time forward to `stop_at` (an earlier time is ignored). Never blocks:
    /// a renewal the channel cannot take now is dropped, and the watchdog then stops the
    /// command at the last stop time it received, which is the safe side.
    pub(crate) fn renew(&mut self, stop_at: Instant) {
        if stop_at > self.stop_at
            && self.send(ToWatchdog::Renew { stop_at_ns: monotonic_ns(stop_at) })
        {
            self.stop_at = stop_at;
        }
    }

    /// True once the last stop time sent has passed: the watchdog stops the command then.
    pub(crate) fn expired(&self) -> bool {
        Instant::now() >= self.stop_at
    }

    fn send(&self, m: ToWatchdog) -> bool {
        matches!((&self.control).write(&m.encode()), Ok(MESSAGE_LEN))
    }

    /// Asks the watchdog to stop the command (SIGTERM to its group, SIGKILL after the grace).
    pub(crate) fn stop(&mut self) {
        self.send(ToWatchdog::Stop);
    }

    /// Waits for the watchdog, which exits with the command's status. If the watchdog was
    /// killed, the command may still run, orphaned: its group is killed here. Cancel-safe.
    pub(crate) async fn wait(&mut self) -> Option<ExitStatus> {
        let st = self.watchdog.wait().await.ok();
        if st.and_then(|s| s.code()).is_none() {
            let _ = kill_process_group(self.pid, Signal::KILL);
        }
        st
    }

    /// [`stop`](Watched::stop), then waits up to `grace` plus a slack; a watchdog that has not
    /// finished by then is killed along with the command's group.
    pub(crate) async fn stop_and_wait(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.stop();
        if let Ok(st) = tokio::time::timeout(grace + STOP_SLACK, self.wait()).await {
            return st;
        }
        let _ = kill_process_group(self.pid, Signal::KILL);
        let _ = self.watchdog.start_kill();
        self.wait().await
    }
}

/// Sends the first message with our standard input as its descriptor, for the command.
fn send_first(control: &UnixStream, m: ToWatchdog) -> std::io::Result<()> {
    let bytes = m.encode();
    let stdin = std::io::stdin();
    let fds = [stdin.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    // A closed standard input is not passed; the command then reads /dev/null.
    if rustix::io::fcntl_getfd(stdin.as_fd()).is_ok() {
        ancillary.push(SendAncillaryMessage::ScmRights(&fds));
    }
    let n = sendmsg(control, &[IoSlice::new(&bytes)], &mut ancillary, SendFlags::empty())?;
    let mut rest = control;
    rest.write_all(&bytes[n..])
}

/// The watchdog's one reply, within [`START_LIMIT`].
async fn read_reply(control: &UnixStream) -> std::io::Result<FromWatchdog> {
    let reader = control.try_clone()?;
    reader.set_read_timeout(Some(START_LIMIT))?;
    let read = tokio::task::spawn_blocking(move || {
        let mut m = [0; MESSAGE_LEN];
        (&reader).read_exact(&mut m).map(|()| FromWatchdog::decode(&m))
    });
    match read.await {
        Ok(Ok(Some(reply))) => Ok(reply),
        Ok(Ok(None)) => Err(std::io::Error::other("a malformed reply")),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(std::io::Error::other(e)),
    }
}
