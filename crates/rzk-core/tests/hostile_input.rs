//! Requests that are valid on the wire but ask the server for unbounded work or memory: each
//! meets a named limit of the core's `Config`, with ZooKeeper's error or a closed connection.
//! And requests from a connection that has not authenticated, when authentication is enforced.

use std::net::SocketAddr;

use rzk_core::{CloseReason, Config, ConnError, Core, Now, Output};
use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    perms, Acl, ConnectRequest, CreateOp, CreateRequest, ErrorCode, Id, MultiOp, PathWatch,
    ReplyHeader, Request,
};

fn now() -> Now {
    Now { mono_ms: 0, wall_ms: 1_700_000_000_000 }
}

fn core(config: Config) -> Core {
    let mut core = Core::new(config, now());
    core.open(1, SocketAddr::from(([127, 0, 0, 1], 1)));
    let mut w = Writer::new();
    ConnectRequest::new_session(10_000).write(&mut w);
    core.receive(1, &w.into_inner(), now()).unwrap();
    drain(&mut core);
    core
}

/// Everything the core emitted, all of it durable: (error codes of the replies, the close).
fn drain(core: &mut Core) -> (Vec<i32>, Option<CloseReason>) {
    let last = core.state().last_zxid();
    core.mark_durable(last);
    let (mut errs, mut close) = (Vec::new(), None);
    while let Some(out) = core.poll_output() {
        match out {
            Output::Send { frame, .. } => {
                if let Ok(h) = ReplyHeader::read(&mut Reader::new(&frame[4..])) {
                    errs.push(h.err);
                }
            }
            Output::Close { reason, .. } => close = Some(reason),
        }
    }
    (errs, close)
}

fn send(core: &mut Core, req: Request) -> (Vec<i32>, Option<CloseReason>) {
    let frame = req.to_frame(7);
    core.receive(1, &frame[4..], now()).unwrap();
    drain(core)
}

fn digest(user: &str) -> Request {
    Request::Auth { auth_type: 0, scheme: "digest".into(), auth: format!("{user}:pw").into() }
}

fn create(path: &str, data: Vec<u8>, acl: Vec<Acl>) -> Request {
    Request::Create(CreateRequest {
        op: CreateOp::Create,
        path: path.into(),
        data: Some(data),
        acl,
        flags: 0,
        ttl_ms: -1,
    })
}

const OK: i32 = 0;

#[test]
fn auth_ids_per_connection_are_bounded_by_count_and_bytes() {
    let mut config = Config { auth_ids_per_connection_max: 3, ..Config::default() };
    let mut c = core(config.clone());
    // The connection's ip id is the first.
    assert_eq!(send(&mut c, digest("a")), (vec![OK], None));
    assert_eq!(send(&mut c, digest("a")), (vec![OK], None), "the same id again is free");
    assert_eq!(send(&mut c, digest("b")), (vec![OK], None));
    let over = send(&mut c, digest("c"));
    assert_eq!(over, (vec![ErrorCode::AuthFailed.as_i32()], Some(CloseReason::TooManyAuthIds)));

    config.auth_ids_per_connection_max = 32;
    config.auth_bytes_per_connection_max = 1024;
    let mut c = core(config);
    assert_eq!(send(&mut c, digest(&"u".repeat(900))), (vec![OK], None));
    let over = send(&mut c, digest(&"v".repeat(200)));
    assert_eq!(over.1, Some(CloseReason::TooManyAuthIds), "1,100 bytes of ids");
}

#[test]
fn an_acl_is_bounded_after_its_auth_entries_are_expanded() {
    let config = Config { acl_entries_max: 8, acl_bytes_max: usize::MAX, ..Config::default() };
    let mut c = core(config);
    for user in ["a", "b", "c"] {
        assert_eq!(send(&mut c, digest(user)), (vec![OK], None));
    }
    // Each `auth` entry becomes three digest entries (the ip id is not copied).
    let auth = |n: i32| -> Vec<Acl> {
        (1..=n).map(|perms| Acl { perms, id: Id::new("auth", "") }).collect()
    };
    assert_eq!(send(&mut c, create("/two", vec![], auth(2))), (vec![OK], None), "six entries");
    let nine = send(&mut c, create("/three", vec![], auth(3)));
    assert_eq!(nine, (vec![ErrorCode::InvalidAcl.as_i32()], None), "nine entries");
    assert!(c.state().node("/three").is_none());
}

#[test]
fn a_multi_read_larger_than_its_limit_closes_the_connection_before_it_is_built() {
    let mut c = core(Config { reply_bytes_max: 1 << 20, ..Config::default() });
    assert_eq!(send(&mut c, create("/big", vec![7; 100_000], Acl::open())), (vec![OK], None));
    let reads = |n: usize| Request::MultiRead(vec![MultiOp::GetData { path: "/big".into() }; n]);
    assert_eq!(send(&mut c, reads(10)), (vec![OK], None), "about 1,000,800 bytes");
    assert_eq!(send(&mut c, reads(11)), (vec![], Some(CloseReason::ReplyTooLarge)));
}

#[test]
fn watches_per_connection_are_bounded_by_count_and_path_bytes() {
    let exists = |p: &str| Request::Exists(PathWatch { path: p.into(), watch: true });
    let get_children = |p: &str| Request::GetChildren(PathWatch { path: p.into(), watch: true });
    let mut config = Config { watches_per_connection_max: 3, ..Config::default() };
    let mut c = core(config.clone());
    let no_node = ErrorCode::NoNode.as_i32();
    assert_eq!(send(&mut c, exists("/a")), (vec![no_node], None));
    assert_eq!(send(&mut c, exists("/a")), (vec![no_node], None), "the same watch again");
    assert_eq!(send(&mut c, exists("/b")), (vec![no_node], None));
    assert_eq!(send(&mut c, get_children("/")), (vec![OK], None), "a child watch is the third");
    assert_eq!(send(&mut c, exists("/c")), (vec![no_node], Some(CloseReason::TooManyWatches)));
    assert_eq!(c.watches().load_of(1), (3, 5), "the refused watch was not added");

    config.watches_per_connection_max = usize::MAX;
    config.watch_path_bytes_per_connection_max = 100;
    let mut c = core(config);
    let long = format!("/{}", "x".repeat(98));
    assert_eq!(send(&mut c, exists(&long)), (vec![no_node], None), "99 bytes");
    assert_eq!(send(&mut c, exists("/y")), (vec![no_node], Some(CloseReason::TooManyWatches)));
}

fn enforcing(schemes: &[&str]) -> Core {
    let enforced_auth_schemes = schemes.iter().map(|s| s.to_string()).collect();
    core(Config { enforced_auth_schemes, ..Config::default() })
}

#[test]
fn enforced_authentication_refuses_requests_until_a_listed_scheme_authenticates() {
    let refused = vec![ErrorCode::SessionClosedRequireSaslAuth.as_i32()];
    let required = Some(CloseReason::AuthRequired);
    let exists = Request::Exists(PathWatch { path: "/".into(), watch: false });
    // The ping too; the reply is a bare header with zxid 0, and the connection then closes.
    let mut c = enforcing(&["digest"]);
    c.receive(1, &Request::Ping.to_frame(-2)[4..], now()).unwrap();
    c.mark_durable(c.state().last_zxid());
    let header = |xid: i32| {
        [&[0, 0, 0, 16][..], &xid.to_be_bytes(), &[0; 8], &(-124i32).to_be_bytes()].concat()
    };
    assert_eq!(c.poll_output(), Some(Output::Send { conn: 1, frame: header(-2) }));
    assert_eq!(c.poll_output(), Some(Output::Close { conn: 1, reason: CloseReason::AuthRequired }));
    // Nothing after the refusal is answered.
    assert_eq!(send(&mut c, exists.clone()), (vec![], None));

    let mut c = enforcing(&["digest"]);
    assert_eq!(send(&mut c, exists.clone()), (refused.clone(), required));
    let mut c = enforcing(&["digest"]);
    let sasl = Request::Sasl { token: vec![1, 2, 3] };
    // Answered as ZooKeeper without a SASL server answers it: OK, with a null token.
    assert_eq!(send(&mut c, sasl), (vec![OK], None), "not refused");
    assert_eq!(send(&mut c, digest("a")), (vec![OK], None));
    assert_eq!(send(&mut c, exists.clone()), (vec![OK], None), "served once authenticated");

    // The ip id comes with every connection; a scheme not listed does not count.
    assert_eq!(send(&mut enforcing(&["ip"]), exists.clone()), (vec![OK], None));
    let mut c = enforcing(&["sasl", "super"]);
    assert_eq!(send(&mut c, digest("a")), (vec![OK], None));
    assert_eq!(send(&mut c, exists.clone()), (refused, required));
    assert_eq!(send(&mut core(Config::default()), exists), (vec![OK], None), "off by default");
}

#[test]
fn a_request_with_the_notification_xid_closes_the_connection() {
    let mut c = core(Config::default());
    let frame = Request::Exists(PathWatch { path: "/".into(), watch: false }).to_frame(-1);
    assert_eq!(c.receive(1, &frame[4..], now()), Err(ConnError::NotificationXid));
    assert_eq!(perms::ALL, 31, "the ACL tests above assume ZooKeeper's bits");
}

#[test]
fn the_acls_of_one_multi_are_bounded_like_a_request() {
    let mut c = core(Config { max_packet_bytes: 10_000, ..Config::default() });
    assert_eq!(send(&mut c, digest(&"u".repeat(1000))), (vec![OK], None));
    // One `auth` entry: 16 bytes in the request, over a kilobyte once expanded.
    let auth = vec![Acl { perms: perms::ALL, id: Id::new("auth", "") }];
    let creates = |prefix: &str, n: usize| {
        Request::Multi(
            (0..n)
                .map(|i| match create(&format!("/{prefix}{i}"), vec![], auth.clone()) {
                    Request::Create(c) => MultiOp::Create(c),
                    _ => unreachable!(),
                })
                .collect(),
        )
    };
    send(&mut c, creates("nine", 9));
    assert!(c.state().node("/nine8").is_some(), "nine lists fit in 10,000 bytes");
    send(&mut c, creates("ten", 10));
    assert!(c.state().node("/ten0").is_none(), "ten do not, and the multi fails whole");
}

#[test]
fn session_passwords_come_from_the_secret_key_not_from_the_session_id() {
    let password = |seed: u128| {
        let mut c = Core::new(Config { seed, ..Config::default() }, now());
        c.open(1, SocketAddr::from(([127, 0, 0, 1], 1)));
        let mut w = Writer::new();
        ConnectRequest::new_session(10_000).write(&mut w);
        c.receive(1, &w.into_inner(), now()).unwrap();
        c.mark_durable(c.state().last_zxid());
        let Some(Output::Send { frame, .. }) = c.poll_output() else { panic!("no reply") };
        let resp = rzk_proto::ConnectResponse::read(&mut Reader::new(&frame[4..])).unwrap();
        (resp.session_id, resp.passwd)
    };
    let (id_a, a) = password(1);
    let (id_b, b) = password(2);
    assert_eq!(id_a, id_b, "the same session id under both keys");
    assert_ne!(a, b, "and a different password");
    assert_eq!(password(1).1, a, "deterministic for one key, as the simulation needs");
}
