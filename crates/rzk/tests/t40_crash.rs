//! The real binary under concurrent write load, killed with SIGKILL at random moments, again
//! and again. After each restart every acknowledged write must be there, with its data, and
//! nothing that was never issued may appear.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rzk_proto::{Acl, CreateOp, CreateRequest, PathWatch, ReplyHeader, Request, Response};
use rzk_testkit::raw::{self, BlockingClient, RawError};
use rzk_testkit::tempdir::TempDir;

const WRITERS: usize = 4;
const IN_FLIGHT: usize = 16;
/// `rzk server --schedule`'s values, which the restarts take in turn.
const SCHEDULES: [&str; 2] = ["fair", "throughput"];

/// Kills the server when dropped, so a failed assertion does not leave it running.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where every server a test starts appends its log: debug level, which names the reason for
/// each connection the server closes, so that a failure can say what the server saw.
fn log_path(dir: &Path) -> PathBuf {
    dir.with_extension("server.log")
}

/// The last lines the test's servers logged, for a failure message.
fn log_tail(dir: &Path) -> String {
    let text = std::fs::read_to_string(log_path(dir)).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    format!(
        "last lines of {}:\n{}",
        log_path(dir).display(),
        lines[lines.len().saturating_sub(40)..].join("\n")
    )
}

/// Fails the test over a request that `e` stopped, with what the servers logged.
fn failed(dir: &Path, what: &str, e: RawError) -> ! {
    panic!("{what}: {e}\n{}", log_tail(dir))
}

/// Starts a server on a port of its own choosing and returns the address it reports. A port
/// picked free by the test and handed over can be picked by the other test of this binary
/// too, running in parallel: once in CI the crash test's first create was reset while its own
/// server's data directory stayed empty, as if it had been talking to the other test's server
/// when that one was killed.
///
/// `io_threads`: the crash cycles alternate one I/O thread and two, so that both a lone
/// connection thread and threads racing for the core's lock are killed mid-write; and, every
/// other pair of cycles, the two ways they take turns (`schedule`, `--schedule`).
fn start(dir: &Path, io_threads: u16, schedule: &str) -> (Server, SocketAddr) {
    let log_from = std::fs::metadata(log_path(dir)).map_or(0, |m| m.len() as usize);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path(dir))
        .expect("open the server log");
    let child = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["server", "--bind", "127.0.0.1", "--port", "0", "--tick-ms", "200"])
        .args(["--io-threads", &io_threads.to_string(), "--schedule", schedule])
        .arg("--data-dir")
        .arg(dir)
        .args(["--snap-count", "3000"])
        .env("RZK_LOG", "debug")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start rzk");
    let mut server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = server.0.try_wait() {
            panic!("rzk exited with {status} before serving\n{}", log_tail(dir));
        }
        let log = std::fs::read(log_path(dir)).unwrap_or_default();
        let ours = String::from_utf8_lossy(log.get(log_from..).unwrap_or_default());
        let addr = ours.lines().find_map(|l| l.split("serving on ").nth(1)?.trim().parse().ok());
        if let Some(addr) = addr {
            return (server, addr);
        }
        assert!(Instant::now() < deadline, "rzk did not start serving\n{}", log_tail(dir));
        thread::sleep(Duration::from_millis(10));
    }
}

/// How long a client's read waits for the server before the test fails.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The session timeout every client asks for.
const SESSION_TIMEOUT: Duration = Duration::from_millis(4000);

/// A new session with the server at `addr`.
fn open(addr: SocketAddr) -> Result<BlockingClient, RawError> {
    let s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut c = BlockingClient::from_stream(s)?;
    c.handshake(&raw::new_session(SESSION_TIMEOUT))?;
    Ok(c)
}

/// `req` and its decoded reply.
fn call(
    c: &mut BlockingClient,
    req: &Request,
    xid: i32,
) -> Result<(ReplyHeader, Response), RawError> {
    let reply = c.call(req, xid)?;
    let body = reply.response(req.op_code()).unwrap();
    Ok((reply.header, body))
}

fn create(path: String, data: Vec<u8>) -> Request {
    Request::Create(CreateRequest {
        op: CreateOp::Create,
        path,
        data: Some(data),
        acl: Acl::open(),
        flags: 0,
        ttl_ms: -1,
    })
}

/// Issues creates of /w{id}/{n} with increasing n, pipelined, until the server dies.
/// Records n as issued when sent and as acknowledged when answered with success.
fn writer(
    addr: SocketAddr,
    id: usize,
    first: u64,
    issued: Arc<Mutex<u64>>,
    acked: Arc<Mutex<BTreeSet<u64>>>,
) {
    let Ok(mut c) = open(addr) else { return };
    let mut next = first;
    let mut window = std::collections::VecDeque::new();
    loop {
        while window.len() < IN_FLIGHT {
            let req = create(format!("/w{id}/{next}"), format!("{id}:{next}").into_bytes());
            *issued.lock().unwrap() = next + 1;
            if c.send(&req, next as i32 + 1).is_err() {
                return;
            }
            window.push_back(next);
            next += 1;
        }
        let Ok(reply) = c.read_reply() else { return };
        let h = reply.header;
        let n = window.pop_front().unwrap();
        assert_eq!(h.xid, n as i32 + 1, "replies in order");
        assert_eq!(h.err, 0, "create /w{id}/{n} failed with {}", h.err);
        acked.lock().unwrap().insert(n);
    }
}

#[test]
fn acknowledged_writes_survive_repeated_sigkill() {
    let cycles: usize =
        std::env::var("RZK_CRASH_CYCLES").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let tmp = TempDir::new("rzk-crash");
    let dir = tmp.join("data");
    let issued: Vec<_> = (0..WRITERS).map(|_| Arc::new(Mutex::new(0u64))).collect();
    let acked: Vec<_> = (0..WRITERS).map(|_| Arc::new(Mutex::new(BTreeSet::new()))).collect();
    let mut rng = 0x2545_f491_4f6c_dd1du64 ^ u64::from(std::process::id());
    let mut total_acked = 0;

    let (mut server, mut addr) = start(&dir, 2, "fair");
    {
        let mut c = open(addr).unwrap_or_else(|e| failed(&dir, "connect", e));
        for id in 0..WRITERS {
            let (h, _) = call(&mut c, &create(format!("/w{id}"), vec![]), 1)
                .unwrap_or_else(|e| failed(&dir, &format!("create /w{id}"), e));
            assert_eq!(h.err, 0);
        }
    }
    for cycle in 0..cycles {
        let writers: Vec<_> = (0..WRITERS)
            .map(|id| {
                let first = *issued[id].lock().unwrap();
                let (i, a) = (issued[id].clone(), acked[id].clone());
                thread::spawn(move || writer(addr, id, first, i, a))
            })
            .collect();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        thread::sleep(Duration::from_millis(100 + rng % 400));
        server.0.kill().unwrap();
        server.0.wait().unwrap();
        for w in writers {
            w.join().expect("writer thread");
        }
        drop(server);
        (server, addr) = start(&dir, 1 + (cycle % 2) as u16, SCHEDULES[(cycle / 2) % 2]);
        let mut c = open(addr).unwrap_or_else(|e| {
            failed(&dir, &format!("cycle {cycle}: reconnect after restart"), e)
        });
        let mut xid = 1;
        for id in 0..WRITERS {
            xid += 1;
            let (h, body) = call(
                &mut c,
                &Request::GetChildren(PathWatch { path: format!("/w{id}"), watch: false }),
                xid,
            )
            .unwrap_or_else(|e| failed(&dir, &format!("cycle {cycle}: list /w{id}"), e));
            assert_eq!(h.err, 0, "cycle {cycle}: /w{id} missing");
            let Response::Children(children) = body else { panic!() };
            let present: BTreeSet<u64> = children.iter().map(|c| c.parse().unwrap()).collect();
            let acked = acked[id].lock().unwrap();
            let issued = *issued[id].lock().unwrap();
            let lost: Vec<_> = acked.difference(&present).collect();
            assert!(
                lost.is_empty(),
                "cycle {cycle}: acknowledged writes lost under /w{id}: {lost:?}"
            );
            let phantom: Vec<_> = present.iter().filter(|n| **n >= issued).collect();
            assert!(
                phantom.is_empty(),
                "cycle {cycle}: never-issued nodes appeared under /w{id}: {phantom:?}"
            );
            // Spot-check data of the newest acknowledged node.
            if let Some(n) = acked.iter().next_back() {
                xid += 1;
                let (h, body) = call(
                    &mut c,
                    &Request::GetData(PathWatch { path: format!("/w{id}/{n}"), watch: false }),
                    xid,
                )
                .unwrap_or_else(|e| failed(&dir, &format!("cycle {cycle}: read /w{id}/{n}"), e));
                assert_eq!(h.err, 0);
                let Response::GetData { data, .. } = body else { panic!() };
                assert_eq!(data.unwrap(), format!("{id}:{n}").into_bytes());
            }
            total_acked = total_acked.max(acked.len());
            // Writers resume at the first index never sent, so no path is ever reused.
        }
    }
    drop(server);
    assert!(
        total_acked > 100,
        "the load was too light to mean anything: {total_acked} acks per writer"
    );
}

#[test]
fn corrupt_synced_log_data_stops_the_server_with_file_and_offset() {
    let tmp = TempDir::new("rzk-corrupt");
    let dir = tmp.join("data");
    let (server, addr) = start(&dir, 2, "fair");
    {
        let mut c = open(addr).unwrap_or_else(|e| failed(&dir, "connect", e));
        for i in 0..50 {
            let (h, _) = call(&mut c, &create(format!("/n{i}"), vec![9; 64]), i + 1)
                .unwrap_or_else(|e| failed(&dir, &format!("create /n{i}"), e));
            assert_eq!(h.err, 0);
        }
    }
    drop(server);
    // Flip a byte inside an early record: data that was synced and followed by later batches.
    let segment = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("log."))
        .expect("a log segment");
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[200] ^= 0x5a;
    std::fs::write(&segment, &bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["server", "--bind", "127.0.0.1", "--port", "0"])
        .arg("--data-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the server must refuse to start");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("corrupt data in"), "{stderr}");
    assert!(stderr.contains(&segment.display().to_string()), "{stderr}");
    assert!(stderr.contains("at offset"), "{stderr}");
}
