//! Bad input closes only the offending connection, with ZooKeeper's error where a client
//! expects one; named limits hold against clients that misbehave; each connection keeps the
//! core's order when many are written at once.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    xid, Acl, ConnectRequest, ConnectResponse, CreateOp, CreateRequest, PathWatch, ReplyHeader,
    Request,
};
use rzk_server::TestServer;
use rzk_testkit::four_letter::four_letter;
use rzk_testkit::raw::BlockingClient;
use rzk_testkit::tempdir::TempDir;

/// How long a test's read waits for the server before it fails.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection without a session yet.
fn open(server: &TestServer) -> BlockingClient {
    wrap(TcpStream::connect(server.addr()).unwrap())
}

fn wrap(s: TcpStream) -> BlockingClient {
    s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    BlockingClient::from_stream(s).unwrap()
}

fn session(server: &TestServer) -> (BlockingClient, ConnectResponse) {
    handshake(open(server))
}

/// A session over a socket whose receive buffer is fixed at `bytes` (no autotuning), so
/// that the kernel holds little of what the client does not read.
fn session_with_receive_buffer(
    server: &TestServer,
    bytes: usize,
) -> (BlockingClient, ConnectResponse) {
    let addr: std::net::SocketAddr = server.addr();
    let sock =
        socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)
            .unwrap();
    sock.set_recv_buffer_size(bytes).unwrap();
    sock.connect(&addr.into()).unwrap();
    handshake(wrap(sock.into()))
}

fn handshake(mut raw: BlockingClient) -> (BlockingClient, ConnectResponse) {
    let resp = raw.handshake(&ConnectRequest::new_session(10_000)).expect("ConnectResponse");
    (raw, resp)
}

/// The next reply, split into its header and the rest.
fn reply(raw: &mut BlockingClient) -> (ReplyHeader, Vec<u8>) {
    let r = raw.read_reply().expect("a reply");
    (r.header, r.body().to_vec())
}

/// Whether the connection is served: a ping's reply is the next frame.
fn ping_ok(raw: &mut BlockingClient) -> bool {
    raw.send_ping().unwrap();
    matches!(raw.read_reply(), Ok(r) if r.header.xid == xid::PING)
}

/// A four-letter word on a fresh connection, and everything the server answers before it
/// closes.
fn ask(server: &TestServer, word: &str) -> String {
    four_letter(server.addr(), word).unwrap()
}

fn create(path: &str, data: Vec<u8>) -> Request {
    Request::Create(CreateRequest {
        op: CreateOp::Create,
        path: path.into(),
        data: Some(data),
        acl: Acl::open(),
        flags: 0,
        ttl_ms: -1,
    })
}

fn server_with(f: impl FnOnce(&mut rzk_server::ServerConfig)) -> TestServer {
    TestServer::builder().config(f).start().unwrap()
}

#[test]
fn oversized_frame_closes_only_that_connection() {
    let s = server_with(|c| c.max_packet_bytes = 1024);
    let (mut good, _) = session(&s);
    let (mut bad, _) = session(&s);
    // A length over jute.maxbuffer is refused from the header alone.
    bad.write_raw(&2048i32.to_be_bytes()).unwrap();
    assert!(bad.closed_by_server());
    assert!(ping_ok(&mut good), "other sessions are unaffected");

    let (mut neg, _) = session(&s);
    neg.write_raw(&(-5i32).to_be_bytes()).unwrap();
    assert!(neg.closed_by_server());
    assert!(ping_ok(&mut good));

    // A request just under the limit is served.
    good.write_raw(&create("/big", vec![7; 900]).to_frame(1)).unwrap();
    assert_eq!(reply(&mut good).0.err, 0);
}

#[test]
fn garbage_handshake_and_header_close_the_connection() {
    let s = TestServer::start().unwrap();
    let mut raw = open(&s);
    raw.write_raw(&[0, 0, 0, 3, 1, 2, 3]).unwrap();
    assert!(raw.closed_by_server(), "a 3-byte ConnectRequest");

    let (mut short, _) = session(&s);
    short.write_raw(&[0, 0, 0, 2, 0, 1]).unwrap();
    assert!(short.closed_by_server(), "a frame too short for a RequestHeader");

    let (mut good, _) = session(&s);
    assert!(ping_ok(&mut good));
}

#[test]
fn unknown_op_gets_unimplemented_then_close() {
    let s = TestServer::start().unwrap();
    let (mut raw, _) = session(&s);
    let mut w = Writer::frame();
    w.i32(7).i32(999);
    raw.write_raw(&w.finish_frame()).unwrap();
    let (h, body) = reply(&mut raw);
    assert_eq!((h.xid, h.zxid, h.err), (7, -1, -6));
    assert!(body.is_empty());
    assert!(raw.closed_by_server());

    // A stand-alone check (valid only inside multi) likewise.
    let (mut raw, _) = session(&s);
    raw.write_raw(&Request::Check { path: "/".into(), version: -1 }.to_frame(8)).unwrap();
    assert_eq!(reply(&mut raw).0.err, -6);
    assert!(raw.closed_by_server());
}

#[test]
fn undecodable_body_gets_marshalling_error_and_the_connection_lives() {
    let s = TestServer::start().unwrap();
    let (mut raw, _) = session(&s);
    // getData whose path length runs past the frame.
    let mut w = Writer::frame();
    w.i32(1).i32(4).i32(1000).raw(b"/a");
    raw.write_raw(&w.finish_frame()).unwrap();
    assert_eq!(reply(&mut raw).0.err, -5);
    raw.write_raw(&Request::Exists(PathWatch { path: "/".into(), watch: false }).to_frame(2))
        .unwrap();
    let (h, _) = reply(&mut raw);
    assert_eq!((h.xid, h.err), (2, 0));
}

#[test]
fn requests_arriving_in_pieces_are_answered() {
    // Each piece is a read shorter than the reader's buffer, which tells it the socket is
    // empty: it then waits for the next bytes' readiness without reading again, and must be
    // woken by every piece, whether it completes a length, a frame or neither.
    let s = TestServer::start().unwrap();
    let (mut raw, _) = session(&s);
    raw.stream().set_nodelay(true).unwrap();
    let exists = |xid| Request::Exists(PathWatch { path: "/".into(), watch: false }).to_frame(xid);
    let len = exists(0).len();
    for (xid, cut) in (1..).zip([1, 3, 4, 5, len - 1]) {
        let frame = exists(xid);
        raw.write_raw(&frame[..cut]).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        raw.write_raw(&frame[cut..]).unwrap();
        let (h, _) = reply(&mut raw);
        assert_eq!((h.xid, h.err), (xid, 0), "cut after {cut} of {len} bytes");
    }
    // A byte at a time, and two frames whose boundary falls inside one write.
    let two: Vec<u8> = exists(10).into_iter().chain(exists(11)).collect();
    for b in &two[..len + 2] {
        raw.write_raw(std::slice::from_ref(b)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(reply(&mut raw).0.xid, 10);
    raw.write_raw(&two[len + 2..]).unwrap();
    assert_eq!(reply(&mut raw).0.xid, 11);
}

#[test]
fn invalid_requests_get_zookeeper_errors() {
    let s = TestServer::start().unwrap();
    let (mut raw, _) = session(&s);
    let cases: Vec<(Request, i32)> = vec![
        (create("noslash", vec![]), -8),
        (create("/a/", vec![]), -101),
        (create("/a//b", vec![]), -101),
        (create("/zookeeper/x\u{0}", vec![]), -8),
        (Request::Delete { path: "/zookeeper".into(), version: -1 }, -8),
        (Request::Delete { path: "/".into(), version: -1 }, -8),
        (Request::GetData(PathWatch { path: "/nope".into(), watch: false }), -101),
        (Request::SetData { path: "/zookeeper/config".into(), data: None, version: -1 }, -102),
        (Request::CheckWatches { path: "/".into(), watch_type: 9 }, -8),
        (Request::RemoveWatches { path: "/".into(), watch_type: 2 }, -121),
    ];
    for (i, (req, err)) in cases.into_iter().enumerate() {
        let xid = i as i32 + 1;
        raw.write_raw(&req.to_frame(xid)).unwrap();
        let (h, _) = reply(&mut raw);
        assert_eq!((h.xid, h.err), (xid, err), "{req:?}");
    }
    assert!(ping_ok(&mut raw));
}

#[test]
fn connections_per_ip_are_limited() {
    let s = server_with(|c| c.max_client_connections_per_ip = 3);
    let kept: Vec<_> = (0..3).map(|_| session(&s).0).collect();
    let mut extra = open(&s);
    assert!(extra.closed_by_server(), "the fourth connection from one address is refused");
    drop(kept);
    // Slots free up when connections close.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut raw = open(&s);
        let req = Request::Ping.to_frame(-2);
        let _ = req;
        let mut w = Writer::frame();
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 10_000,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: None,
        }
        .write(&mut w);
        raw.write_raw(&w.finish_frame()).unwrap();
        if raw.read_frame().is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "no slot freed after the others closed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_client_that_stops_reading_is_throttled_without_loss() {
    let s = server_with(|c| c.max_outstanding_requests_per_connection = 8);
    let (mut raw, _) = session(&s);
    // Pipeline small reads without reading any reply, until the kernel buffers fill and the
    // writes block: the server stops reading once 8 replies are outstanding.
    raw.stream().set_write_timeout(Some(Duration::from_millis(1500))).unwrap();
    let req = Request::Exists(PathWatch { path: "/".into(), watch: false }).to_frame(9);
    let mut sent = 0usize;
    while raw.write_raw(&req).is_ok() {
        sent += 1;
        assert!(sent < 5_000_000, "writes never blocked: the server reads without limit");
    }
    // The last write may have been cut short; every whole request is answered, in order.
    let (mut other, _) = session(&s);
    assert!(ping_ok(&mut other), "other connections keep being served");
    for i in 0..sent {
        let (h, _) = reply(&mut raw);
        assert_eq!((h.xid, h.err), (9, 0), "reply {i} of {sent}");
    }
}

fn pipelined_large_reads_are_throttled_by_bytes_without_loss(s: &TestServer) {
    let (mut raw, _) = session_with_receive_buffer(s, 64 * 1024);
    raw.write_raw(&create("/blob", vec![1; 1 << 20]).to_frame(1)).unwrap();
    assert_eq!(reply(&mut raw).0.err, 0);
    // A large write first: with a data directory the reads' replies then wait in the server
    // until its sync (milliseconds for 1.9 MB) is done, where the socket's queue does not
    // see them.
    let mut all = create("/w", vec![2; 1_900_000]).to_frame(3);
    let req = Request::GetData(PathWatch { path: "/blob".into(), watch: false }).to_frame(2);
    all.extend((0..100).flat_map(|_| req.iter().copied()));
    raw.write_raw(&all).unwrap();
    // The client reads nothing for a while: the server stops decoding at its budget.
    std::thread::sleep(Duration::from_millis(500));
    let h = reply(&mut raw).0;
    assert_eq!((h.xid, h.err), (3, 0));
    for i in 0..100 {
        let (h, body) = reply(&mut raw);
        assert_eq!((h.xid, h.err, body.len()), (2, 0, 4 + (1 << 20) + 68), "reply {i}");
    }
    assert!(ping_ok(&mut raw));
}

// 4 MiB may queue, a quarter of it per batch: a hundred 1 MiB replies would be built at once
// (and the client dropped as not reading) if only the request count were bounded.
fn large_reads_config(c: &mut rzk_server::ServerConfig) {
    c.max_queued_bytes_per_connection = 4 << 20;
    c.max_packet_bytes = 2 << 20;
}

#[test]
fn pipelined_large_reads_are_throttled_by_bytes_without_loss_in_memory() {
    pipelined_large_reads_are_throttled_by_bytes_without_loss(&server_with(large_reads_config));
}

#[test]
fn pipelined_large_reads_are_throttled_by_bytes_without_loss_when_durable() {
    let dir = TempDir::new("rzk-t20-reads");
    let s = TestServer::builder()
        .data_dir(dir.join("data"))
        .config(large_reads_config)
        .start()
        .unwrap();
    pipelined_large_reads_are_throttled_by_bytes_without_loss(&s);
}

#[test]
fn a_client_that_lets_notifications_pile_up_is_dropped() {
    let s = server_with(|c| c.max_queued_bytes_per_connection = 256 * 1024);
    let (mut writer, _) = session(&s);
    // A recursive watch on the root: every change below it is a notification, which the
    // server sends whether or not the client reads.
    let (mut deaf, _) = session_with_receive_buffer(&s, 64 * 1024);
    deaf.write_raw(&Request::AddWatch { path: "/".into(), mode: 1 }.to_frame(1)).unwrap();
    let long = format!("/{}", "n".repeat(2000));
    writer.write_raw(&create(&long, vec![]).to_frame(1)).unwrap();
    assert_eq!(reply(&mut writer).0.err, 0);
    // 4,000 notifications of 2 KiB: past the kernel's buffers (the client's fixed at 64 KiB,
    // the server's send buffer at most 4 MiB) and the server's 256 KiB.
    let set = Request::SetData { path: long.clone(), data: Some(vec![]), version: -1 };
    for _ in 0..40 {
        let batch: Vec<u8> = (0..100).flat_map(|_| set.to_frame(2)).collect();
        writer.write_raw(&batch).unwrap();
        for _ in 0..100 {
            assert_eq!(reply(&mut writer).0.err, 0);
        }
    }
    assert!(ping_ok(&mut writer), "other connections keep being served");
    assert!(deaf.closed_by_server(), "the client that never reads is dropped");
}

#[test]
fn a_deaf_client_whose_session_expires_does_not_keep_its_connection() {
    // Replies past the budget stop the server reading, pings included, so the session of a
    // client that reads nothing expires; its close must not wait behind bytes it never takes.
    let s = TestServer::builder()
        .tick_ms(100)
        .config(|c| c.max_queued_bytes_per_connection = 256 * 1024)
        .start()
        .unwrap();
    let srvr_connections = || {
        let out = ask(&s, "srvr");
        let line = out.lines().find(|l| l.starts_with("Connections: ")).unwrap().to_string();
        line["Connections: ".len()..].parse::<usize>().unwrap()
    };
    let (mut writer, _) = session(&s);
    writer.write_raw(&create("/blob", vec![1; 64 * 1024]).to_frame(1)).unwrap();
    assert_eq!(reply(&mut writer).0.err, 0);
    let (mut deaf, resp) = session_with_receive_buffer(&s, 64 * 1024);
    assert_eq!(resp.timeout_ms, 2_000, "the shortest timeout: 20 ticks");
    deaf.stream().set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let req = Request::GetData(PathWatch { path: "/blob".into(), watch: false }).to_frame(2);
    for _ in 0..2048 {
        if deaf.write_raw(&req).is_err() {
            break;
        }
    }
    // The writer's session and this query's connection, and the deaf one until it is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    while srvr_connections() > 2 {
        assert!(Instant::now() < deadline, "the deaf client's connection is still open");
        assert!(ping_ok(&mut writer), "the other session stays alive");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_connection_without_a_session_is_closed_after_its_timeout() {
    let s = server_with(|c| c.sessionless_connection_timeout_ms = 300);
    let mut half = open(&s);
    // The length of a ConnectRequest, and then only part of it.
    half.write_raw(&44i32.to_be_bytes()).unwrap();
    half.write_raw(&[0; 10]).unwrap();
    let t0 = Instant::now();
    assert!(half.closed_by_server());
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_millis(250), "closed after {waited:?}, before its timeout");
    // A session's connection is not subject to it.
    let (mut raw, _) = session(&s);
    std::thread::sleep(Duration::from_millis(600));
    assert!(ping_ok(&mut raw));
}

#[test]
fn four_letter_words_and_their_whitelist() {
    let s = server_with(|c| c.core.four_letter_words = vec!["ruok".into(), "srvr".into()]);
    let ask_listed = |word: &str| ask(&s, word);
    assert_eq!(ask_listed("ruok"), "imok");
    let srvr = ask_listed("srvr");
    assert!(srvr.contains("Zookeeper version: 3.9.2-rzk"), "{srvr}");
    assert!(srvr.contains("Mode: standalone"), "{srvr}");
    assert!(srvr.contains("Node count: 5"), "{srvr}");
    assert_eq!(ask_listed("mntr"), "mntr is not executed because it is not in the whitelist.\n");

    let all = TestServer::start().unwrap();
    let out = ask(&all, "mntr");
    assert!(out.contains("zk_server_state\tstandalone"), "{out}");
    for word in ["conf", "cons", "envi", "wchs", "dump", "isro", "stat", "wchc", "wchp"] {
        let out = ask(&all, word);
        assert!(!out.is_empty() || word == "wchc" || word == "wchp", "{word} printed nothing");
    }
}

/// The version in a getData reply's Stat (after the data, at the Stat's 33rd byte).
fn get_data_version(body: &[u8]) -> i32 {
    let len = i32::from_be_bytes(body[..4].try_into().unwrap()).max(0) as usize;
    let at = 4 + len + 32;
    i32::from_be_bytes(body[at..at + 4].try_into().unwrap())
}

/// Frames are written after the core's lock is released, by whichever thread finds the
/// connection idle; each connection must still see the core's order: replies in xid order,
/// and a watch's event before any reply that shows the change which fired it (ZooKeeper's
/// guarantee that a client sees the event before the new data).
fn fan_out_keeps_each_connections_order(s: &TestServer) {
    const WATCHERS: usize = 16;
    const SETS: i32 = 400;
    const PLAIN_READS: i32 = 3;
    let (mut setter, _) = session(s);
    setter.write_raw(&create("/o", b"0".to_vec()).to_frame(1)).unwrap();
    assert_eq!(reply(&mut setter).0.err, 0);
    let watchers: Vec<_> = (0..WATCHERS)
        .map(|w| {
            let (mut raw, _) = session(s);
            std::thread::spawn(move || {
                let (mut xid, mut expect) = (0i32, 1i32);
                // The version the armed watch was set at; `None` once its event has come.
                let mut armed: Option<i32> = None;
                let mut events = 0;
                loop {
                    let rearm = armed.is_none();
                    for i in 0..=PLAIN_READS {
                        xid += 1;
                        let watch = rearm && i == 0;
                        raw.write_raw(
                            &Request::GetData(PathWatch { path: "/o".into(), watch }).to_frame(xid),
                        )
                        .unwrap();
                    }
                    let first = xid - PLAIN_READS;
                    let mut newest = 0;
                    while expect <= xid {
                        let frame = raw.read_frame().expect("the server closed a watcher");
                        let h = ReplyHeader::read(&mut Reader::new(&frame)).unwrap();
                        if h.xid == -1 {
                            let kind = i32::from_be_bytes(frame[16..20].try_into().unwrap());
                            assert_eq!(kind, 3, "watcher {w}: NodeDataChanged expected");
                            assert!(armed.is_some(), "watcher {w}: an event with no watch armed");
                            armed = None;
                            events += 1;
                            continue;
                        }
                        assert_eq!(
                            (h.xid, h.err),
                            (expect, 0),
                            "watcher {w}: replies out of order"
                        );
                        expect += 1;
                        let v = get_data_version(&frame[16..]);
                        newest = newest.max(v);
                        if rearm && h.xid == first {
                            armed = Some(v);
                        } else if let Some(at) = armed {
                            assert!(
                                v <= at,
                                "watcher {w}: version {v} arrived before the event of the \
                                 watch set at version {at}"
                            );
                        }
                    }
                    if newest == SETS {
                        return events;
                    }
                }
            })
        })
        .collect();
    let set =
        |v: i32| Request::SetData { path: "/o".into(), data: Some(vec![b'x'; 8]), version: v };
    for v in 0..SETS {
        setter.write_raw(&set(v).to_frame(2 + v)).unwrap();
        assert_eq!(reply(&mut setter).0.err, 0);
    }
    for w in watchers {
        let events = w.join().expect("a watcher saw frames out of order");
        assert!(events > 0, "a watcher saw no event at all");
    }
}

#[test]
fn fan_out_keeps_each_connections_order_in_memory() {
    fan_out_keeps_each_connections_order(&TestServer::start().unwrap());
}

#[test]
fn fan_out_keeps_each_connections_order_when_durable() {
    let dir = TempDir::new("rzk-t20-order");
    // Durable, the log thread sends the events and the setter's replies once they are synced.
    let s = TestServer::builder().data_dir(dir.join("data")).start().unwrap();
    fan_out_keeps_each_connections_order(&s);
}
