//! Misbehaving HTTP clients for the server's HTTP listeners (the metrics endpoint and the
//! AdminServer): malformed and oversized requests, slowloris clients that send part of a
//! request or nothing, and one that dribbles its headers a byte at a time. Each returns what
//! the server did, for the test to judge against the listener's limits.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Generous bound for a server to close or answer a connection, on a loaded machine.
pub const HTTP_PATIENCE: Duration = Duration::from_secs(30);

/// Sends `bytes` raw on a connection of its own; returns whatever the server answers before
/// it closes.
pub fn raw(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(HTTP_PATIENCE)).expect("read timeout");
    // The server may answer and close before it has read everything.
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The answers to a request line of binary garbage and to a request whose header is
/// `header_bytes` long.
pub fn malformed_and_oversized(addr: SocketAddr, header_bytes: usize) -> (String, String) {
    let garbage = raw(addr, b"\x16\x03\x01\x02\x00garbage\r\n\r\n");
    let mut big = b"GET / HTTP/1.1\r\nHost: rzk\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', header_bytes));
    big.extend(b"\r\n\r\n");
    (garbage, raw(addr, &big))
}

/// Waits until the server closes `s` (EOF or reset), draining what it sends; panics if it
/// has not within [`HTTP_PATIENCE`].
pub fn closed_by_server(s: &mut TcpStream) {
    s.set_read_timeout(Some(HTTP_PATIENCE)).expect("read timeout");
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => {}
        // A connection closed with unread bytes is reset: closed too.
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server did not close a slow client within {HTTP_PATIENCE:?}: {e}"),
    }
}

/// Slowloris: `conns` connections that each send one of `firsts` in turn (part of a request,
/// or nothing) and then wait. Returns how long the server took to close them all.
pub fn slowloris(addr: SocketAddr, conns: usize, firsts: &[&[u8]]) -> Duration {
    let started = Instant::now();
    let mut slow: Vec<TcpStream> = firsts
        .iter()
        .cycle()
        .take(conns)
        .map(|first| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(first).expect("the first bytes");
            s
        })
        .collect();
    slow.iter_mut().for_each(closed_by_server);
    started.elapsed()
}

/// A client that sends a request's headers one byte every `every`, never finishing them.
/// Returns how long the server let it go on before closing the connection.
pub fn dribble(addr: SocketAddr, every: Duration) -> Duration {
    let mut s = TcpStream::connect(addr).expect("connect");
    let started = Instant::now();
    let header = b"GET / HTTP/1.1\r\nHost: rzk\r\nX-Slow: ";
    for b in header.iter().chain(std::iter::repeat(&b'a')) {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        // A closed connection reads EOF (or a reset) at once; an open one times out.
        s.set_read_timeout(Some(every)).expect("read timeout");
        match s.read(&mut [0u8; 256]) {
            Ok(0) => break,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            _ => {}
        }
        assert!(started.elapsed() < HTTP_PATIENCE, "a dribbling client was never cut off");
    }
    started.elapsed()
}

/// The limits of the HTTP listener under test, as the server names them.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Connections served at once; more are closed at accept.
    pub connections_max: usize,
    /// Time a client has to send its request's headers.
    pub header_read_timeout: Duration,
    /// Bytes of one request's headers.
    pub request_bytes_max: usize,
}

/// Every misbehaving client in turn against the listener at `addr`, each bounded by `limits`;
/// then `good_path` is still answered 200. Panics on the first limit that does not hold.
pub fn assert_bounded(addr: SocketAddr, limits: HttpLimits, good_path: &str) {
    let (garbage, oversized) = malformed_and_oversized(addr, limits.request_bytes_max * 8);
    assert!(garbage.starts_with("HTTP/1.1 400"), "malformed request line: {garbage:?}");
    assert!(oversized.starts_with("HTTP/1.1 431"), "oversized header: {oversized:.40?}");
    // More clients than the listener serves, silent or with half a request line: the extra
    // ones are closed at once, the rest at the header timeout, not before.
    let half: &[&[u8]] = &[b"", b"GET /comm"];
    let waited = slowloris(addr, limits.connections_max + 4, half);
    let timeout = limits.header_read_timeout;
    assert!(waited >= timeout / 2, "slow clients cut off after {waited:?}, before {timeout:?}");
    // Progress does not buy time: the header timeout counts from the first byte.
    let dribbled = dribble(addr, Duration::from_millis(200));
    assert!(dribbled >= timeout / 2, "dribbler cut off after {dribbled:?}, before {timeout:?}");
    // The listener's own address as the host: a listener may answer to no other name.
    let request = format!("GET {good_path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let answer = raw(addr, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200"), "after the attack: {answer:.80?}");
}

/// Runs `probe` (one request on the client port, say) every `every` until `done()`, each
/// within [`HTTP_PATIENCE`], and returns how many ran: the client port kept serving while
/// `done` was false.
///
/// # Panics
/// If one probe takes longer than [`HTTP_PATIENCE`].
pub async fn probe_until<F, Fut>(done: impl Fn() -> bool, every: Duration, mut probe: F) -> usize
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut i = 0;
    while !done() {
        tokio::time::timeout(HTTP_PATIENCE, probe(i)).await.expect("the client port stalled");
        i += 1;
        tokio::time::sleep(every).await;
    }
    i
}

/// [`assert_bounded`] on its own thread while `probe` runs on the caller's runtime (see
/// [`probe_until`]); returns how many probes ran, at least one.
///
/// # Panics
/// As [`assert_bounded`] and [`probe_until`] do, or if no probe ran meanwhile.
pub async fn assert_bounded_while_serving<F, Fut>(
    addr: SocketAddr,
    limits: HttpLimits,
    good_path: &str,
    probe: F,
) -> usize
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let good = good_path.to_string();
    let attack = std::thread::spawn(move || assert_bounded(addr, limits, &good));
    let probes = probe_until(|| attack.is_finished(), Duration::from_millis(100), probe).await;
    if let Err(panic) = attack.join() {
        std::panic::resume_unwind(panic);
    }
    assert!(probes > 0, "no request ran beside the bad HTTP clients");
    probes
}
