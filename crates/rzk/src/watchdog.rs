//! `rzk __watchdog --grace-ms G -- CMD`: runs a command that may act only while its owner
//! (`rzk elect`) says so, and stops the command's whole process group when the owner cannot.
//!
//! # Why a separate process
//! The owner decides when the command must stop, but it cannot enforce that once it is dead,
//! hung or stopped. The watchdog is a small synchronous process that does nothing else: it
//! starts the command as the leader of a new process group, relays its exit status as its
//! own, and sends the group SIGTERM, then SIGKILL after the grace, when
//! - the owner asks it to (leadership lost, the owner was told to stop);
//! - the channel from the owner closes: the owner died, even by SIGKILL, since the kernel
//!   closes a dead process's end; or a message is malformed. The grace is then cut to
//!   [`ORPHAN_GRACE`], so the group is gone within a second;
//! - the stop time the owner last sent passes without renewal: the owner is hung, stopped
//!   (SIGSTOP) or starved. The owner sends the lease deadline minus the stop budget, the
//!   same time at which it would stop the command itself, and moves it forward while the
//!   session is healthy.
//!
//! `PR_SET_PDEATHSIG` would reach only the command itself, not its children, and fires on the
//! exit of the thread that forked rather than the process; it also cannot be set without an
//! unsafe `pre_exec`. The watchdog covers the whole group and a frozen owner.
//!
//! The watchdog is the command's parent and reaps it only after signalling the group: while
//! the leader is unreaped its process group id cannot be reused, so a signal to the group
//! never reaches an unrelated process. When the command exits by itself, whatever it left
//! in its group is killed as well: nothing it started outlives the term.
//!
//! The watchdog runs in a process group of its own, so a Ctrl-C at the terminal or a signal to
//! the owner's group reaches the owner, which stops the command with its grace; the
//! watchdog only learns of it from the owner.
//!
//! # The channel
//! Standard input is one end of a Unix socket pair, whose other end only the owner holds. The
//! first message ([`ToWatchdog::Renew`]) carries the owner's own standard input as an
//! `SCM_RIGHTS` descriptor, which becomes the command's (a closed one becomes `/dev/null`);
//! the watchdog answers once with [`FromWatchdog`]. Messages are described in
//! [`crate::watchdog_proto`].

use std::io::{IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use clap::Args;
use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use rustix::process::{kill_process_group, waitid, Pid, Signal, WaitId, WaitIdOptions};

use crate::watchdog_proto::{status_code, until_ns, FromWatchdog, ToWatchdog, MESSAGE_LEN};

/// How long the watchdog waits for the owner's first message before giving up unstarted.
const FIRST_MESSAGE_LIMIT: Duration = Duration::from_secs(10);
/// Events queued from the channel reader and the exit watcher to the watchdog's loop.
const EVENT_QUEUE: usize = 16;
/// How long after SIGKILL the watchdog waits for the command to exit before giving up on it
/// (a process in uninterruptible sleep dies only when its system call returns).
const REAP_LIMIT: Duration = Duration::from_secs(5);
/// The longest grace the command gets once its owner is gone: no one will wait for it, and the
/// group must be gone within a second of the owner's death.
const ORPHAN_GRACE: Duration = Duration::from_millis(500);
/// The watchdog's exit status when it could not run the command at all.
const NOT_RUN: u8 = 127;

/// Flags of the hidden `rzk __watchdog`; only `rzk elect` starts it.
#[derive(Debug, Args)]
pub(crate) struct WatchdogArgs {
    /// Time between SIGTERM and SIGKILL when the command is stopped.
    #[arg(long)]
    grace_ms: u64,
    /// The command and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

fn say(msg: impl std::fmt::Display) {
    eprintln!("rzk watchdog: {msg}");
}

enum Event {
    Message(ToWatchdog),
    /// The channel ended; why.
    Closed(&'static str),
    /// The command has exited and is not reaped yet.
    Exited,
}

/// Runs the watchdog; its exit status is the command's.
pub(crate) fn run(a: &WatchdogArgs) -> ExitCode {
    match watch(a) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            say(format_args!("not running {:?}: {e}", a.command[0]));
            ExitCode::from(NOT_RUN)
        }
    }
}

fn watch(a: &WatchdogArgs) -> std::io::Result<u8> {
    // Descriptor 0 stays open too, but the command gets its own standard input.
    let control = UnixStream::from(rustix::io::fcntl_dupfd_cloexec(std::io::stdin(), 3)?);
    control.set_read_timeout(Some(FIRST_MESSAGE_LIMIT))?;
    let (first, stdin) = recv_first(&control)?;
    let Some(ToWatchdog::Renew { stop_at_ns }) = first else {
        return Err(std::io::Error::other("the first message is not a deadline"));
    };
    let spawned = Command::new(&a.command[0])
        .args(&a.command[1..])
        .process_group(0)
        .stdin(stdin.map_or_else(Stdio::null, Stdio::from))
        .spawn();
    let child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(0);
            (&control).write_all(&FromWatchdog::SpawnFailed { errno }.encode())?;
            return Ok(NOT_RUN);
        }
    };
    // The owner may be gone already; then the reader reports the closed channel.
    let _ = (&control).write_all(&FromWatchdog::Started { pid: child.id() }.encode());
    control.set_read_timeout(None)?;
    let (tx, rx) = sync_channel(EVENT_QUEUE);
    let pid = Pid::from_child(&child);
    let exits = tx.clone();
    std::thread::spawn(move || watch_exit(pid, &exits));
    std::thread::spawn(move || read_messages(control, &tx));
    let grace = Duration::from_millis(a.grace_ms);
    Ok(supervise(child, &rx, stop_at_ns, grace))
}

/// The first message, and the descriptor that rides with it.
fn recv_first(control: &UnixStream) -> std::io::Result<(Option<ToWatchdog>, Option<OwnedFd>)> {
    let mut m = [0; MESSAGE_LEN];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let got =
        recvmsg(control, &mut [IoSliceMut::new(&mut m)], &mut ancillary, RecvFlags::CMSG_CLOEXEC)?;
    let mut fd = None;
    for msg in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = msg {
            // Any descriptor beyond the first is closed as the iterator drops it.
            for f in fds {
                fd.get_or_insert(f);
            }
        }
    }
    if got.bytes == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    // A stream may split a message; the descriptor rides with its first byte.
    let mut rest = control;
    rest.read_exact(&mut m[got.bytes..])?;
    Ok((ToWatchdog::decode(&m), fd))
}

fn read_messages(mut control: UnixStream, tx: &SyncSender<Event>) {
    let mut m = [0; MESSAGE_LEN];
    loop {
        let event = match control.read_exact(&mut m) {
            Ok(()) => {
                ToWatchdog::decode(&m).map_or(Event::Closed("a malformed message"), Event::Message)
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Event::Closed("the process that started it is gone")
            }
            Err(_) => Event::Closed("its channel failed"),
        };
        let last = matches!(event, Event::Closed(_));
        if tx.send(event).is_err() || last {
            return;
        }
    }
}

/// Reports the command's exit without reaping it, so its group id stays reserved until the
/// stragglers in the group have been signalled.
fn watch_exit(pid: Pid, tx: &SyncSender<Event>) {
    let exited = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
    while let Err(rustix::io::Errno::INTR) = waitid(WaitId::Pid(pid), exited) {}
    let _ = tx.send(Event::Exited);
}

fn supervise(child: Child, rx: &Receiver<Event>, mut stop_at_ns: u64, grace: Duration) -> u8 {
    let (why, grace) = loop {
        match rx.recv_timeout(until_ns(stop_at_ns)) {
            Ok(Event::Message(ToWatchdog::Renew { stop_at_ns: t })) => stop_at_ns = t,
            Ok(Event::Message(ToWatchdog::Stop)) => break (None, grace),
            Ok(Event::Closed(why)) => break (Some(why), grace.min(ORPHAN_GRACE)),
            Ok(Event::Exited) => return reap(child),
            Err(RecvTimeoutError::Timeout) if until_ns(stop_at_ns).is_zero() => {
                let why = "its deadline passed unrenewed (the process that started it is hung or stopped)";
                break (Some(why), grace);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                break (Some("lost track of the process that started it"), grace.min(ORPHAN_GRACE))
            }
        }
    };
    if let Some(why) = why {
        say(format_args!("{why}; stopping the command's process group"));
    }
    stop(child, rx, grace)
}

/// SIGTERM to the group, SIGKILL after the grace, then reap.
fn stop(child: Child, rx: &Receiver<Event>, grace: Duration) -> u8 {
    signal_group(&child, Signal::TERM);
    if !exited_within(rx, grace) {
        signal_group(&child, Signal::KILL);
        if !exited_within(rx, REAP_LIMIT) {
            say(format_args!("the command outlived SIGKILL by {} ms", REAP_LIMIT.as_millis()));
            return status_code(None);
        }
    }
    reap(child)
}

fn exited_within(rx: &Receiver<Event>, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    loop {
        match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
            Ok(Event::Exited) | Err(RecvTimeoutError::Disconnected) => return true,
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => return false,
        }
    }
}

/// Kills what is left in the group of an exited, unreaped command, then reaps it.
fn reap(mut child: Child) -> u8 {
    signal_group(&child, Signal::KILL);
    status_code(child.wait().ok())
}

fn signal_group(child: &Child, sig: Signal) {
    let _ = kill_process_group(Pid::from_child(child), sig);
}
