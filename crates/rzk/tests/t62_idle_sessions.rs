//! What an idle session costs `rzk server`: the server's resident memory grows by at most
//! [`IDLE_SESSION_BYTES_MAX`] per session held open and silent. A connection once cost 9-10 KiB
//! before its first byte (a read buffer reserved on its first, often spurious, wake-up and held
//! for its life, and a writer channel's 32-slot block); at 19,000 sessions that is 180 MiB for
//! nothing. Then 4.3 KB, with two latency histograms of its own (512 bytes), which now go to
//! pools the connections share, and 3.8 KB with a writer task spawned with every connection,
//! which is now spawned by the first write the socket does not take at once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rzk_proto::jute::Writer;
use rzk_proto::ConnectRequest;

/// Sessions opened: enough that one session's cost stands out of the allocator's noise.
const SESSIONS: usize = 2_000;
/// The bound, bytes per session: the shell's reader task, its flow control and the core's
/// session and connection, with room for the allocator's rounding.
const IDLE_SESSION_BYTES_MAX: usize = 3584;

fn rss_kib(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The server, serving on the port it printed.
fn server() -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["server", "--in-memory", "--bind", "127.0.0.1", "--port", "0"])
        .args(["--max-client-cnxns", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let mut log = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut byte = [0u8; 1];
    while !log.contains("serving on") || !log.ends_with('\n') {
        assert!(Instant::now() < deadline, "no 'serving on' in {log}");
        if err.read(&mut byte).unwrap() == 0 {
            panic!("the server ended: {log}");
        }
        log.push(char::from(byte[0]));
    }
    // Keep draining its log, so that it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let line = log.lines().find(|l| l.contains("serving on")).unwrap();
    (child, line.rsplit("serving on ").next().unwrap().trim().to_string())
}

/// A connection with a session, its ConnectResponse read.
fn session(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut w = Writer::new();
    ConnectRequest::new_session(30_000).write(&mut w);
    let body = w.into_inner();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    s.write_all(&frame).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut reply = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut reply).unwrap();
    s
}

#[test]
fn an_idle_session_costs_the_server_a_few_kilobytes() {
    let (mut child, addr) = server();
    // One session first: the runtime's and the core's one-time allocations are not a session's.
    let warm = session(&addr);
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kib(child.id());
    let held: Vec<TcpStream> = (0..SESSIONS).map(|_| session(&addr)).collect();
    // Idle: the server has read every handshake and answered; nothing more comes.
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(child.id());
    let per_session = (after.saturating_sub(before)) * 1024 / SESSIONS;
    let _ = child.kill();
    let _ = child.wait();
    drop((warm, held));
    assert!(
        per_session <= IDLE_SESSION_BYTES_MAX,
        "{per_session} bytes per idle session (limit {IDLE_SESSION_BYTES_MAX}): {before} KiB \
         before, {after} KiB with {SESSIONS} sessions"
    );
}
