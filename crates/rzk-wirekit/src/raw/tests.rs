//! The raw clients against an in-process rzk server.

use std::time::Duration;

use rzk_proto::{Acl, CreateOp, CreateRequest, EventType, OpCode, PathWatch, Request, Response};
use rzk_server::TestServer;

use super::{resume, AsyncClient, BlockingClient, RawError};

const TIMEOUT: Duration = Duration::from_secs(10);

fn create(path: &str) -> Request {
    Request::Create(CreateRequest {
        op: CreateOp::Create,
        path: path.into(),
        data: Some(b"x".to_vec()),
        acl: Acl::open(),
        flags: 0,
        ttl_ms: -1,
    })
}

fn exists(path: &str, watch: bool) -> Request {
    Request::Exists(PathWatch { path: path.into(), watch })
}

#[test]
fn blocking_calls_pipelines_and_reads_notifications() {
    let s = TestServer::start().unwrap();
    let (mut c, session) = BlockingClient::connect(s.addr(), TIMEOUT).unwrap();
    assert_ne!(session.session_id, 0);
    c.stream().set_read_timeout(Some(TIMEOUT)).unwrap();

    let reply = c.call(&create("/a"), 1).unwrap();
    assert_eq!((reply.header.xid, reply.header.err), (1, 0));
    assert_eq!(reply.response(OpCode::Create).unwrap(), Response::Path("/a".into()));

    // Pipelined: one write, replies in order; an error reply decodes as empty.
    let reqs = [exists("/a", true), create("/a"), exists("/none", false)];
    c.send_all(reqs.iter().zip(2..)).unwrap();
    let replies: Vec<_> = (0..3).map(|_| c.read_reply().unwrap()).collect();
    let seen: Vec<_> = replies.iter().map(|r| (r.header.xid, r.header.err)).collect();
    assert_eq!(seen, [(2, 0), (3, -110), (4, -101)]);
    assert_eq!(replies[1].response(OpCode::Create).unwrap(), Response::Empty);

    let (mut other, _) = BlockingClient::connect(s.addr(), TIMEOUT).unwrap();
    let set = Request::SetData { path: "/a".into(), data: None, version: -1 };
    assert_eq!(other.call(&set, 1).unwrap().header.err, 0);
    let event = c.read_notification().unwrap();
    assert_eq!((event.event_type, event.path.as_str()), (EventType::NodeDataChanged, "/a"));

    c.ping().unwrap();
    c.close().unwrap();
    other.close().unwrap();
}

#[test]
fn blocking_resumes_a_session_on_a_new_connection() {
    let s = TestServer::start().unwrap();
    let (first, session) = BlockingClient::connect(s.addr(), TIMEOUT).unwrap();
    drop(first);
    let again = resume(session.session_id, session.passwd.clone(), TIMEOUT);
    let (mut c, resumed) = BlockingClient::connect_with(s.addr(), &again).unwrap();
    assert_eq!(resumed.session_id, session.session_id);
    c.ping().unwrap();
}

#[test]
fn blocking_writes_raw_bytes_and_sees_the_close() {
    let s = TestServer::start().unwrap();
    let (mut c, _) = BlockingClient::connect(s.addr(), TIMEOUT).unwrap();
    c.stream().set_read_timeout(Some(TIMEOUT)).unwrap();
    // A frame too short for a request header.
    c.write_raw(&[0, 0, 0, 2, 0, 1]).unwrap();
    assert!(c.closed_by_server());
    assert_eq!(BlockingClient::four_letter_word(s.addr(), "ruok").unwrap(), "imok");
}

#[test]
fn blocking_keep_alive_outlives_the_session_timeout() {
    let s = TestServer::builder().tick_ms(100).start().unwrap();
    let (mut c, session) = BlockingClient::connect(s.addr(), Duration::ZERO).unwrap();
    let granted = Duration::from_millis(session.timeout_ms as u64);
    c.keep_alive(Some(granted / 3)).unwrap();
    let (mut other, _) = BlockingClient::connect(s.addr(), TIMEOUT).unwrap();
    assert_eq!(c.call(&exists("/k", true), 1).unwrap().header.err, -101);
    let later = std::thread::spawn(move || {
        std::thread::sleep(granted * 2);
        other.call(&create("/k"), 1).unwrap().header.err
    });
    // Pings go out while nothing arrives; their replies are skipped.
    let event = c.read_notification().unwrap();
    assert_eq!((event.event_type, event.path.as_str()), (EventType::NodeCreated, "/k"));
    assert_eq!(later.join().unwrap(), 0);
}

#[test]
fn a_refused_handshake_names_the_connection_limit_symptom() {
    let s = TestServer::builder().config(|c| c.max_client_connections_per_ip = 1).start().unwrap();
    let _kept = BlockingClient::connect(s.addr(), TIMEOUT).unwrap();
    let e = BlockingClient::connect(s.addr(), TIMEOUT).unwrap_err();
    assert!(matches!(e, RawError::Handshake { .. }), "{e:?}");
    assert!(e.is_closed(), "{e:?}");
    assert!(e.to_string().contains("closed the connection before answering"), "{e}");
}

#[tokio::test]
async fn async_calls_pipelines_and_turns_blocking() {
    let s = TestServer::start().unwrap();
    let addr = s.addr().to_string();
    let (mut c, _) = AsyncClient::connect(&addr, TIMEOUT).await.unwrap();
    assert_eq!(c.call(&create("/b"), 1).await.unwrap().header.err, 0);
    let reqs = [exists("/b", true), exists("/b", false)];
    c.send_all(reqs.iter().zip(2..)).await.unwrap();
    let first = c.read_reply().await.unwrap();
    assert_eq!((first.header.xid, first.header.err), (2, 0));
    // The second reply came in the same read, or arrives now.
    c.readable().await.unwrap();
    let second = c.read_reply().await.unwrap();
    assert_eq!(second.header.xid, 3);
    assert!(!c.has_buffered_frame());

    let (mut other, _) = AsyncClient::connect(&addr, TIMEOUT).await.unwrap();
    let delete = Request::Delete { path: "/b".into(), version: -1 };
    assert_eq!(other.call(&delete, 1).await.unwrap().header.err, 0);
    let event = c.read_notification().await.unwrap();
    assert_eq!(event.event_type, EventType::NodeDeleted);
    c.ping().await.unwrap();

    let mut blocking = c.into_blocking().unwrap();
    blocking.ping().unwrap();
    blocking.close().unwrap();
    other.close().await.unwrap();
}

#[tokio::test]
async fn async_connect_failure_names_the_address() {
    let e = AsyncClient::open("127.0.0.1:1").await.unwrap_err();
    assert!(e.to_string().starts_with("cannot connect to 127.0.0.1:1: "), "{e}");
}
