//! `rzk bench --workload handoff-event`: the election handoff as issue 6 defines it, from the
//! leader's delete to its successor's event, on any server and with no election library on
//! either side. Participants run on threads of their own with blocking reads, so that the
//! successor is woken by its event directly, as the floor's echo thread is.
//!
//! `handoff-read` goes one step further: the successor lists the election's children on its
//! event, as a recipe that checks before it claims must (Curator's LeaderLatch does, and so
//! does rzk-election), and the handoff ends with that list's reply. No LeaderLatch on any
//! server can hand off faster than this workload does on it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rzk_proto::jute::Reader;
use rzk_proto::{EventType, PathWatch, ReplyHeader, Request, WatcherEvent};
use tokio::sync::oneshot;

use crate::bench::{call, connect, create, err, frame_len, BenchArgs, Io, Stats};
use crate::cli::CliError;

/// What the coordinator of `handoff-event` asks of a participant, which owns its session.
enum Order {
    /// Create our node at the tail of the queue; answer with its path.
    Join(oneshot::Sender<Result<String, CliError>>),
    /// Watch the predecessor's node; answer once the watch is set, then report when the
    /// node's deletion arrives (with `list`, when the election's children, read on that
    /// event, arrive).
    Watch {
        predecessor: String,
        armed: oneshot::Sender<Result<(), CliError>>,
        event: oneshot::Sender<Result<Instant, CliError>>,
    },
    /// Delete our node; report the instant just before the request is written, then the reply.
    Delete {
        path: String,
        sent: oneshot::Sender<Instant>,
        done: oneshot::Sender<Result<(), CliError>>,
    },
}

/// How often a waiting `handoff-event` participant pings: well inside the smallest session
/// timeout a server grants by default (two ticks; ZooKeeper's and rzk's tick is 2 s).
const PARTICIPANT_PING_INTERVAL: Duration = Duration::from_secs(1);

/// The xid ZooKeeper clients give pings, and servers their replies.
const PING_XID: i32 = -2;

/// A `handoff-event` participant's session, used from its own thread with blocking reads: the
/// successor is woken by its event's arrival directly, as the floor's echo is, not through an
/// async runtime's reactor, so the measurement is the server's.
struct Blocking {
    r: std::io::BufReader<std::net::TcpStream>,
    w: std::net::TcpStream,
}

impl Blocking {
    fn new(io: Io) -> Result<Blocking, CliError> {
        if !io.0.buffer().is_empty() {
            return Err(err("bytes after the session's handshake"));
        }
        let stream = io.0.into_inner().reunite(io.1).map_err(err)?.into_std().map_err(err)?;
        stream.set_nonblocking(false).map_err(err)?;
        stream.set_read_timeout(Some(PARTICIPANT_PING_INTERVAL)).map_err(err)?;
        Ok(Blocking { r: std::io::BufReader::new(stream.try_clone().map_err(err)?), w: stream })
    }

    fn read_frame(&mut self) -> Result<Vec<u8>, CliError> {
        let mut len = [0; 4];
        self.read_full(&mut len)?;
        let mut buf = vec![0; frame_len(i32::from_be_bytes(len))?];
        self.read_full(&mut buf)?;
        Ok(buf)
    }

    /// Fills `buf`, pinging the server whenever the socket has been silent for
    /// [`PARTICIPANT_PING_INTERVAL`] (its read timeout): a participant far back in a long
    /// queue (many participants, a long `--gap-ms`) waits longer than a session timeout for its
    /// event, and a slow reply must not end the run either. A ping's reply is skipped by
    /// whoever reads it.
    fn read_full(&mut self, buf: &mut [u8]) -> Result<(), CliError> {
        use std::io::{ErrorKind, Read};
        let mut at = 0;
        while at < buf.len() {
            match self.r.read(&mut buf[at..]) {
                Ok(0) => return Err(err("the server closed the session's connection")),
                Ok(n) => at += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    self.ping()?;
                }
                Err(e) => return Err(err(e)),
            }
        }
        Ok(())
    }

    /// One request; its error code and reply frame (events, and the reply to a ping sent
    /// while waiting for an event, are skipped).
    fn call(&mut self, req: &Request) -> Result<(i32, Vec<u8>), CliError> {
        use std::io::Write;
        self.w.write_all(&req.to_frame(1)).map_err(err)?;
        loop {
            let f = self.read_frame()?;
            let h = ReplyHeader::read(&mut Reader::new(&f)).map_err(err)?;
            if h.xid != -1 && h.xid != PING_XID {
                return Ok((h.err, f));
            }
        }
    }

    fn ok(&mut self, req: &Request, what: &str) -> Result<Vec<u8>, CliError> {
        match self.call(req)? {
            (0, f) => Ok(f),
            (code, _) => Err(err(format!("{what}: error {code}"))),
        }
    }

    /// Waits for `path`'s deletion, pinging while nothing arrives; the instant it arrived.
    fn deletion(&mut self, path: &str) -> Result<Instant, CliError> {
        loop {
            let f = self.read_frame()?;
            let at = Instant::now();
            let mut r = Reader::new(&f);
            let h = ReplyHeader::read(&mut r).map_err(err)?;
            if h.xid == PING_XID {
                continue;
            }
            let e = WatcherEvent::read(&mut r).map_err(err)?;
            if h.xid != -1 || e.event_type != EventType::NodeDeleted || e.path != path {
                return Err(err(format!("expected {path}'s deletion, got {e:?}")));
            }
            return Ok(at);
        }
    }

    /// Lists `parent`'s children, as a recipe does on its predecessor's deletion; the instant
    /// the list arrived, or an error if `own` is not first in it (every node here has the same
    /// prefix, so the lowest sequence number sorts first).
    fn first_in_list(&mut self, parent: &str, own: &str) -> Result<Instant, CliError> {
        let req = Request::GetChildren(PathWatch { path: parent.into(), watch: false });
        let f = self.ok(&req, "getChildren")?;
        let at = Instant::now();
        let mut r = Reader::new(&f);
        let children = ReplyHeader::read(&mut r).and_then(|_| r.read_string_vec()).map_err(err)?;
        match children.iter().min() {
            Some(first) if first == own => Ok(at),
            _ => Err(err(format!(
                "{own} is not first after its predecessor's deletion: {children:?}"
            ))),
        }
    }

    fn ping(&mut self) -> Result<(), CliError> {
        use std::io::Write;
        self.w.write_all(&Request::Ping.to_frame(PING_XID)).map_err(err)
    }
}

/// One `handoff-event` participant: carries out orders on its own session until an order
/// fails (reported to the coordinator) or the coordinator hangs up. With `list`, a successor
/// lists `parent`'s children on its predecessor's deletion (`handoff-read`).
fn participant(
    mut io: Blocking,
    parent: &str,
    list: bool,
    orders: &std::sync::mpsc::Receiver<Order>,
) {
    use std::sync::mpsc::RecvTimeoutError;
    // Our node's name once joined: `handoff-read` checks it is first in the list it reads.
    let mut own = String::new();
    loop {
        let order = match orders.recv_timeout(PARTICIPANT_PING_INTERVAL) {
            Ok(order) => order,
            // A leader between handoffs (`--gap-ms`) keeps its session too; the reply is
            // skipped by the next call.
            Err(RecvTimeoutError::Timeout) => match io.ping() {
                Ok(()) => continue,
                Err(_) => return,
            },
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let failed = match order {
            Order::Join(reply) => {
                let node = create(format!("{parent}/n-"), vec![], 3); // ephemeral, sequential
                let r = io.ok(&node, "create").and_then(|f| {
                    let mut r = Reader::new(&f);
                    ReplyHeader::read(&mut r).and_then(|_| r.read_string()).map_err(err)
                });
                if let Ok(path) = &r {
                    own = path.rsplit('/').next().unwrap_or_default().to_owned();
                }
                let failed = r.is_err();
                let _ = reply.send(r);
                failed
            }
            Order::Watch { predecessor, armed, event } => {
                let exists = Request::Exists(PathWatch { path: predecessor.clone(), watch: true });
                match io.ok(&exists, "exists") {
                    Ok(_) => {
                        let _ = armed.send(Ok(()));
                        let mut r = io.deletion(&predecessor);
                        if list && r.is_ok() {
                            r = io.first_in_list(parent, &own);
                        }
                        let failed = r.is_err();
                        let _ = event.send(r);
                        failed
                    }
                    Err(e) => {
                        let _ = armed.send(Err(e));
                        true
                    }
                }
            }
            Order::Delete { path, sent, done } => {
                let _ = sent.send(Instant::now());
                let r = io.ok(&Request::Delete { path, version: -1 }, "delete").map(drop);
                let failed = r.is_err();
                let _ = done.send(r);
                failed
            }
        };
        if failed {
            return;
        }
    }
}

/// Waits for a participant's answer, at most 10 s: a server that stops answering or drops a
/// watch stops the run instead of hanging it.
async fn answer<T>(rx: oneshot::Receiver<Result<T, CliError>>, what: &str) -> Result<T, CliError> {
    match tokio::time::timeout(Duration::from_secs(10), rx).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => Err(err(format!("{what}: the participant stopped"))),
        Err(_) => Err(err(format!("{what}: no answer within 10 s"))),
    }
}

/// `handoff-event`: the election's handoff as the server sees it (issue 6's definition): from
/// the leader's delete to its successor's event, with no election library on either side.
/// `handoff-read` (`list`): to the reply of the list the successor reads on that event.
pub(crate) async fn handoff_event(
    a: &BenchArgs,
    hosts: &str,
    list: bool,
    deadline: Instant,
) -> Result<Stats, CliError> {
    let parent = format!("/bench/handoff-{}", std::process::id());
    let mut io = connect(hosts).await?;
    call(&mut io, &create(parent.clone(), vec![], 0)).await?;
    let n = a.participants;
    let mut orders = Vec::with_capacity(n);
    for i in 0..n {
        let (tx, rx) = std::sync::mpsc::channel();
        let (conn, parent) = (Blocking::new(connect(hosts).await?)?, parent.clone());
        std::thread::Builder::new()
            .name(format!("participant-{i}"))
            .spawn(move || participant(conn, &parent, list, &rx))
            .map_err(err)?;
        orders.push(tx);
    }
    let send = |i: usize, o: Order| orders[i].send(o).map_err(|_| err("a participant stopped"));
    // Joins `who` at the tail behind `predecessor` (if any); returns its node and the receiver
    // of the predecessor's deletion.
    let join = |who: usize, predecessor: Option<String>| async move {
        let (tx, rx) = oneshot::channel();
        send(who, Order::Join(tx))?;
        let node = answer(rx, "join").await?;
        let Some(predecessor) = predecessor else { return Ok((node, None)) };
        let (armed, armed_rx) = oneshot::channel();
        let (event, event_rx) = oneshot::channel();
        send(who, Order::Watch { predecessor, armed, event })?;
        answer(armed_rx, "watch").await?;
        Ok::<_, CliError>((node, Some(event_rx)))
    };
    // The queue, leader first: (participant, its node, the receiver of its predecessor's
    // deletion).
    let mut queue: VecDeque<(usize, String, Option<_>)> = VecDeque::with_capacity(n);
    for who in 0..n {
        let (node, event) = join(who, queue.back().map(|q| q.1.clone())).await?;
        queue.push_back((who, node, event));
    }
    let mut stats = Stats::default();
    while Instant::now() < deadline {
        if a.gap_ms > 0 {
            tokio::time::sleep(Duration::from_millis(a.gap_ms)).await;
        }
        let (leader, node, _) = queue.pop_front().expect("n >= 2");
        let event = queue.front_mut().and_then(|q| q.2.take()).expect("the successor watches");
        let (sent, sent_rx) = oneshot::channel();
        let (done, done_rx) = oneshot::channel();
        send(leader, Order::Delete { path: node, sent, done })?;
        let t0 = sent_rx.await.map_err(|_| err("delete: the participant stopped"))?;
        let at = answer(event, if list { "the successor's list" } else { "the successor's event" })
            .await?;
        stats
            .latencies_us
            .push(at.saturating_duration_since(t0).as_micros().min(u32::MAX as u128) as u32);
        answer(done_rx, "delete").await?;
        // Rejoin at the tail only now, as the election workloads do: the rejoin's writes do
        // not race the handoff being measured.
        let (node, event) = join(leader, queue.back().map(|q| q.1.clone())).await?;
        queue.push_back((leader, node, event));
    }
    // Dropping the senders ends the participants waiting for orders; those waiting for an
    // event end with the process, and their sessions with their sockets.
    Ok(stats)
}
