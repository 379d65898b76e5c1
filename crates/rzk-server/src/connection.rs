//! A connection's reader task, which decodes frames and feeds them to the core within its
//! output budget, and waits, as the connection ends, for the writer task (`writer_task`) if
//! one was needed.

use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rzk_core::{ConnError, ConnId};
use rzk_proto::{four_letter_word, split_frame};

use crate::flow_control::ConnCtl;
use crate::output_queue::{ConnOut, Outgoing};
use crate::shared::Inner;
use crate::transport::ReadSide;

/// How often a reader throttled by output still held in the core (replies waiting for a sync)
/// looks again.
const HELD_OUTPUT_POLL_MS: u64 = 5;
/// Bytes read from a socket per call by a connection that streams (its last read filled the
/// buffer): pipelined clients read in chunks this large.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Bytes read per call otherwise, once a frame is half read: a page.
const READ_SMALL_BYTES: usize = 4 * 1024;
/// Bytes an idle connection's first read takes, into a buffer on the stack: more than a
/// typical request, so that one read and one allocation of its size take it.
const READ_FIRST_BYTES: usize = 1024;

/// Serves one admitted connection until either side closes it, then takes it out of the core
/// and the connection table.
pub(crate) async fn serve(
    inner: Arc<Inner>,
    conn: ConnId,
    peer: SocketAddr,
    rd: ReadSide,
    out: Arc<ConnOut>,
    ctl: Arc<ConnCtl>,
) {
    if let Err(e) = read_loop(&inner, rd, conn, &ctl).await {
        tracing::info!(conn, %peer, "closing connection: {e}");
    }
    let flush = {
        let mut sh = inner.lock();
        sh.core.closed(conn);
        if let Some(h) = sh.conns.remove(&conn) {
            if let Some(n) = sh.per_ip.get_mut(&h.ip) {
                *n -= 1;
                if *n == 0 {
                    sh.per_ip.remove(&h.ip);
                }
            }
        }
        inner.pump(&mut sh)
    };
    flush.run();
    // The writer's inbox closes with the last handle on the output, this one or a flush's.
    let writer = out.unwatch_writer();
    drop(out);
    let Some(writer) = writer else { return };
    // A stopped connection (dropped for not reading, a failed write, a close the writer
    // already carried out) sends nothing more: a writer still waiting for the socket to
    // drain would otherwise keep it open. After a client's own close, the writer finishes
    // what it holds and ends once the handle is gone.
    if ctl.stopped.load(Ordering::SeqCst) {
        writer.abort();
    }
    let _ = writer.await;
}

/// Why a connection's reader stopped with an error.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    #[error("bad frame: {0}")]
    Frame(#[from] rzk_proto::FrameError),
    #[error("{0}")]
    Protocol(#[from] ConnError),
    #[error("no session after {0} ms")]
    Sessionless(u64),
}

async fn read_loop(
    inner: &Inner,
    mut rd: ReadSide,
    conn: ConnId,
    ctl: &ConnCtl,
) -> Result<(), ReadError> {
    let max_packet = inner.config.max_packet_bytes;
    let max_in_flight = inner.config.max_outstanding_requests_per_connection.max(1);
    // What one batch of requests may make the core build, and how much may wait for the
    // socket before the next batch: two of these and one more reply stay under the limit
    // that drops a client as not reading.
    let output_budget = inner.config.max_queued_bytes_per_connection / 4;
    // Made once: `select!` builds every branch's future on each read, even a disabled one.
    let sessionless =
        tokio::time::sleep(Duration::from_millis(inner.config.sessionless_connection_timeout_ms));
    tokio::pin!(sessionless);
    // Empty, and holding no allocation, while the connection is idle: an idle session costs no
    // read buffer (one kept for the connection's life was 64 KiB of heap, a page or more of it
    // resident, per connection).
    let mut buf: Vec<u8> = Vec::new();
    let mut streaming = false;
    let mut start = 0usize;
    let mut first = true;
    let mut fed_any = false;
    // The last batch left more than the budget in the core, waiting for the log to sync the
    // writes before it; only then is the core asked again, under its lock.
    let mut held_in_core = false;
    let mut frames = Vec::new();
    loop {
        let limits = Limits { output_budget, max_in_flight };
        if !wait_for_room(inner, conn, ctl, &mut held_in_core, limits).await {
            return Ok(());
        }
        if ctl.stopped.load(Ordering::SeqCst) {
            return Ok(());
        }
        let budget = max_in_flight - ctl.in_flight.load(Ordering::SeqCst);
        while frames.len() < budget {
            let Some(len) = split_frame(&buf[start..], max_packet)? else { break };
            frames.push(start + 4..start + 4 + len);
            start += 4 + len;
        }
        if frames.is_empty() {
            if start == buf.len() {
                start = 0;
                if streaming {
                    buf.clear();
                } else {
                    buf = Vec::new();
                }
            } else if start > 0 {
                buf.drain(..start);
                start = 0;
            }
            let wanted = if streaming { READ_CHUNK_BYTES } else { READ_SMALL_BYTES };
            let n = tokio::select! {
                n = read_some(&mut rd, &mut buf, wanted) => n?,
                _ = ctl.stop.notified() => return Ok(()),
                _ = &mut sessionless, if !fed_any => {
                    return Err(ReadError::Sessionless(
                        inner.config.sessionless_connection_timeout_ms,
                    ));
                }
            };
            if n == 0 {
                return Ok(());
            }
            streaming = n >= READ_FIRST_BYTES && buf.len() == buf.capacity();
            if first && buf.len() >= 4 {
                first = false;
                if let Some(word) = four_letter_word(&buf) {
                    answer_four_letter_word(inner, conn, ctl, word).await;
                    return Ok(());
                }
            }
            continue;
        }
        fed_any = true;
        held_in_core = feed(inner, conn, ctl, &buf, &mut frames, &mut start, output_budget)?;
    }
}

/// Reads what the client sent into `buf`. A `buf` without an allocation (the connection is not
/// streaming) gets none while the socket is idle: once the socket says there is something, the
/// first read goes into a buffer on the stack and only the bytes read are copied into `buf`, so
/// that a session's ping or read costs an allocation its own size and an idle connection holds
/// nothing. Readiness may be spurious (a new socket's often is, which made a reader that
/// reserved before reading hold 4 KiB from its first wake-up): a read that would block waits
/// again. Into a `buf` with an allocation (half a frame, or a streaming client's chunk),
/// `wanted` more are read. Cancellation safe: it awaits readiness, or `ReadSide::read_buf`,
/// which is.
async fn read_some(rd: &mut ReadSide, buf: &mut Vec<u8>, wanted: usize) -> io::Result<usize> {
    while buf.capacity() == 0 {
        rd.readable().await?;
        let mut first = [0u8; READ_FIRST_BYTES];
        match rd.try_read(&mut first) {
            Some(Ok(n)) => {
                buf.extend_from_slice(&first[..n]);
                return Ok(n);
            }
            Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => {}
            Some(Err(e)) => return Err(e),
            None => break,
        }
    }
    if buf.capacity() - buf.len() < wanted / 2 {
        buf.reserve(wanted);
    }
    rd.read_buf(buf).await
}

/// What a reader may have outstanding before it decodes more requests.
#[derive(Clone, Copy)]
struct Limits {
    /// Bytes a batch may make the core build, and that may wait for the socket.
    output_budget: usize,
    /// Requests decoded and not yet answered on the wire.
    max_in_flight: usize,
}

/// Waits until the connection's output and requests in flight are back within `limits`; false
/// if the connection is stopped meanwhile. The limit is exact: frames beyond it wait,
/// undecoded, in the read buffer (at most one read chunk plus one packet), and the socket is not
/// read until replies drain.
async fn wait_for_room(
    inner: &Inner,
    conn: ConnId,
    ctl: &ConnCtl,
    held_in_core: &mut bool,
    limits: Limits,
) -> bool {
    loop {
        let queued =
            ctl.queued_bytes.load(Ordering::SeqCst) + ctl.transit_bytes.load(Ordering::SeqCst);
        if *held_in_core {
            *held_in_core =
                queued + inner.lock().core.conn_output_bytes(conn) > limits.output_budget;
        }
        let wait = *held_in_core
            || queued > limits.output_budget
            || ctl.in_flight.load(Ordering::SeqCst) >= limits.max_in_flight;
        if !wait {
            return true;
        }
        tokio::select! {
            _ = ctl.resume_reading.notified() => {}
            _ = ctl.stop.notified() => return false,
            // Bytes leaving the core are not announced; look again soon.
            _ = tokio::time::sleep(Duration::from_millis(HELD_OUTPUT_POLL_MS)),
                if *held_in_core => {}
        }
    }
}

/// Answers a four-letter word in place of the connection's first frame, and waits for the
/// writer to close the connection after the answer.
async fn answer_four_letter_word(inner: &Inner, conn: ConnId, ctl: &ConnCtl, word: &str) {
    let shell = inner.stats_report().shell_figures();
    let out = {
        let sh = inner.lock();
        let text = rzk_core::four_letter::run_with(&sh.core, word, inner.now(), &shell);
        sh.conns.get(&conn).map(|h| {
            let bytes = text.unwrap_or_default().into_bytes();
            h.out.push(Outgoing { conn, bytes, replies: 0, close: true, framed: false });
            h.out.clone()
        })
    };
    if let Some(o) = out {
        o.flush(inner.config.max_queued_bytes_per_connection);
    }
    ctl.stop.notified().await;
}

/// Feeds the decoded `frames` (ranges of `buf`) to the core under one lock, stopping early
/// once they have made it build more than `output_budget` bytes, then routes and writes what
/// the core emitted. Frames not fed are left in `buf` from `start`, undecoded, until the output
/// drains. Returns whether this connection's output still held in the core (waiting for a sync)
/// is over the budget.
fn feed(
    inner: &Inner,
    conn: ConnId,
    ctl: &ConnCtl,
    buf: &[u8],
    frames: &mut Vec<Range<usize>>,
    start: &mut usize,
    output_budget: usize,
) -> Result<bool, ConnError> {
    ctl.in_flight.fetch_add(frames.len(), Ordering::SeqCst);
    ctl.clock.arrived(Instant::now(), frames.iter().map(|r| &buf[r.clone()]));
    let mut sh = inner.lock();
    let now = inner.now();
    let mut result = Ok(());
    let output_before = sh.core.output_bytes();
    let mut fed = 0;
    for range in frames.iter() {
        result = sh.core.receive(conn, &buf[range.clone()], now);
        fed += 1;
        if result.is_err() || sh.core.output_bytes().saturating_sub(output_before) > output_budget {
            break;
        }
    }
    if let Some(rest) = frames.get(fed) {
        *start = rest.start - 4;
        ctl.in_flight.fetch_sub(frames.len() - fed, Ordering::SeqCst);
        ctl.clock.withdrawn(frames.len() - fed);
    }
    frames.clear();
    let flush = inner.pump(&mut sh);
    let held_in_core = sh.core.conn_output_bytes(conn) > output_budget;
    drop(sh);
    flush.run();
    result.map(|()| held_in_core)
}
